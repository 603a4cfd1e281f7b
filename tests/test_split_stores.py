"""Redis or Postgres restarted mid-job under ``trajforge up --split`` (a Celery worker runs the shards).

Both stores are private to the test (``tests.private_stores``): the machine's shared Redis and
Postgres are never touched. The policy is a small OpenAI-shaped server in the test process that
answers every chat call after a short delay, so shards are mid-flight when a store goes down; it
is the gateway process's upstream, so every call crosses the gateway as a rollout's calls do.
The outcome every test asserts: the job ends; every group is stored exactly once (its members
once each, no duplicate ids), or the job has failed loudly with each unstored group failed and
its error recorded; nothing is left pending or running.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from shared.topology import url_table
from tests.conftest import REPO_ROOT, LoopbackServer
from tests.private_stores import PrivatePostgres, PrivateRedis, postgres_bin

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TASKS, GROUP_SIZE, SHARD_SIZE = 8, 2, 2


class _Policy:
    """Chat completions answered after ``delay_s``; counts the calls."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s, self.calls, self._lock = delay_s, 0, threading.Lock()
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self._chat)

    async def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.calls += 1
        await asyncio.sleep(self.delay_s)
        return {"id": "c", "object": "chat.completion", "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "The answer is 4."}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def _scratch() -> Path:
    # Not under pytest's 0700 tmp root: the postgres user must reach the cluster's directory.
    path = Path(tempfile.mkdtemp(prefix="trajforge-stores-"))
    path.chmod(0o755)
    return path


def _migrate_and_key(pg: PrivatePostgres) -> tuple[str, str]:
    """A fresh database on the private cluster, migrated; an admin key in it."""
    import asyncpg

    from shared.auth import create_key
    from shared.db.migrate import upgrade
    from shared.db.session import create_engine_for, make_sessionmaker
    from shared.settings import Settings

    async def create() -> None:
        conn = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{pg.port}/postgres")
        try:
            await conn.execute('CREATE DATABASE "trajforge"')
        finally:
            await conn.close()

    asyncio.run(create())
    url = pg.url.rsplit("/", 1)[0] + "/trajforge"
    upgrade(url)
    settings = Settings(env="test", database_url=url, redis_url="")

    async def key() -> str:
        engine = create_engine_for(settings)
        try:
            async with make_sessionmaker(engine)() as session:
                _, value = await create_key(session, "stores-test", salt=settings.key_salt, scope="admin")
                await session.commit()
            return value
        finally:
            await engine.dispose()

    return url, asyncio.run(key())


def _free_block(count: int) -> int:
    import random
    import socket

    for _ in range(200):
        base = random.randrange(20000, 30000)
        ok = True
        for port in range(base, base + count):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no free block of ports")


class _Stack:
    """Private Redis and Postgres, the policy server, and ``trajforge up --split`` on them."""

    def __init__(self) -> None:
        self.scratch = _scratch()
        self.redis = PrivateRedis(self.scratch / "redis")
        self.pg: PrivatePostgres | None = None
        self.policy_server: LoopbackServer | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        self.redis.start()
        self.pg = PrivatePostgres(self.scratch / "pg").start()
        self.db_url, self.key = _migrate_and_key(self.postgres)
        self.policy = _Policy(delay_s=0.4)
        self.policy_server = LoopbackServer(self.policy.app).__enter__()
        self.base = _free_block(8)
        self.table = url_table("loopback", base_port=self.base)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRAJFORGE_")}
        env |= {"TRAJFORGE_HOME": str(self.scratch / "home"), "TRAJFORGE_DATABASE_URL": self.db_url,
                "TRAJFORGE_REDIS_URL": self.redis.url, "TRAJFORGE_ENV": "test", "TRAJFORGE_LOG_LEVEL": "WARNING",
                "TRAJFORGE_ROLLOUT_POLL_S": "0.2", "PYTHONPATH": str(REPO_ROOT)}
        self.log = (self.scratch / "stack.log").open("w")
        self.proc = subprocess.Popen([sys.executable, "-m", "services.cli", "up", "--split", "--base-port",
                                      str(self.base), "--ready-timeout", "420"], cwd=REPO_ROOT, env=env, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 450  # seven interpreters importing the stack on a loaded machine
        while not self._up():
            assert self.proc.poll() is None, self.tail()
            assert time.monotonic() < deadline, "the split stack did not come up\n" + self.tail()
            time.sleep(0.5)
        stub = [{"model": "stub", "url": self.policy_server.url, "return_token_ids": False, "logprobs": False}]
        put = httpx.put(f"{self.table['gateway']}/v1/gateway/upstreams", json=stub, headers=self.auth, timeout=30)
        assert put.status_code == 200, put.text

    @property
    def postgres(self) -> PrivatePostgres:
        assert self.pg is not None
        return self.pg

    def tail(self) -> str:
        self.log.flush()
        return (self.scratch / "stack.log").read_text()[-4000:]

    def _up(self) -> bool:
        try:
            return all(httpx.get(f"{self.table[s]}/healthz", timeout=1).status_code == 200
                       for s in ("gateway", "rollout", "reward"))
        except httpx.HTTPError:
            return False

    @property
    def auth(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.key}"}

    def submit(self) -> str:
        body = {"tasks": [{"id": f"t{i}", "messages": [{"role": "user", "content": f"What is {i} + 4?"}]}
                          for i in range(TASKS)],
                "group_size": GROUP_SIZE, "shard_size": SHARD_SIZE, "mode": "messages",
                "policy": {"model": "stub"},
                "limits": {"max_turns": 1, "timeout_s": 60}}
        resp = httpx.post(f"{self.table['rollout']}/v1/rollouts", json=body, headers=self.auth, timeout=30)
        assert resp.status_code == 202, resp.text
        return str(resp.json()["id"])

    def when_calls(self, count: int, within_s: float = 60) -> None:
        deadline = time.monotonic() + within_s
        while self.policy.calls < count:
            assert time.monotonic() < deadline, "the shards never called the policy\n" + self.tail()
            time.sleep(0.05)

    def close(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.log.close()
        if self.policy_server is not None:
            self.policy_server.__exit__(None, None, None)
        self.redis.kill()
        if self.pg is not None:
            self.pg.crash()
        shutil.rmtree(self.scratch, ignore_errors=True)


@pytest.fixture
def stack() -> Iterator[_Stack]:
    # The private stores are started from the host's own binaries (make test installs both): fail, never skip.
    assert postgres_bin() is not None and shutil.which("redis-server") is not None, \
        "needs the Postgres server binaries and redis-server on this host"
    made = _Stack()
    try:
        yield made
    finally:
        made.close()


def _settled(stack: _Stack, job_id: str, within_s: float = 120) -> dict[str, Any]:
    """Poll the job until it ends (the API may answer 5xx while a store is down)."""
    deadline = time.monotonic() + within_s
    while True:
        assert time.monotonic() < deadline, f"job {job_id} never ended\n" + stack.tail()
        try:
            resp = httpx.get(f"{stack.table['rollout']}/v1/rollouts/{job_id}", headers=stack.auth, timeout=5)
        except httpx.HTTPError:
            time.sleep(0.3)
            continue
        if resp.status_code == 200 and resp.json()["status"] in ("succeeded", "failed", "cancelled"):
            return dict(resp.json())
        time.sleep(0.3)


def _groups_and_rows(stack: _Stack, job_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    import asyncpg

    async def read() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        conn = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{stack.postgres.port}/trajforge")
        try:
            job = uuid.UUID(job_id)
            groups = await conn.fetch("SELECT id, task_id, status, summary->>'error' AS error FROM trajectory_group "
                                      "WHERE job_id = $1",
                                      job)
            rows = await conn.fetch("SELECT id, group_id, sample_index, attempt, stop_reason FROM trajectory "
                                    "WHERE job_id = $1", job)
        finally:
            await conn.close()
        return [dict(g) for g in groups], [dict(r) for r in rows]

    return asyncio.run(read())


def _assert_exactly_once_or_loud(stack: _Stack, job_id: str) -> dict[str, Any]:
    job = _settled(stack, job_id)
    groups, rows = _groups_and_rows(stack, job_id)
    assert len(groups) == TASKS and job["total_groups"] == TASKS
    assert not [g for g in groups if g["status"] in ("pending", "running")], groups  # nothing stuck
    done = [g for g in groups if g["status"] == "done"]
    members: dict[Any, list[int]] = {}
    for row in rows:
        members.setdefault(row["group_id"], []).append(row["sample_index"])
        assert row["stop_reason"], row
    assert len({r["id"] for r in rows}) == len(rows)  # no trajectory twice
    assert set(members) == {g["id"] for g in done}  # only stored groups have rows ...
    assert all(sorted(m) == list(range(GROUP_SIZE)) for m in members.values()), members  # ... each member once
    assert job["done_groups"] == len(done) and job["counts"].get("trajectories", 0) == len(rows)
    if job["status"] == "succeeded":
        assert len(done) == TASKS
    else:  # failed loudly: every group not stored says why
        assert job["status"] == "failed", job
        assert all(g["status"] == "failed" and g["error"] for g in groups if g["status"] != "done"), groups
    return job


def test_redis_restarted_mid_job_every_group_is_stored_once(stack: _Stack) -> None:
    job_id = stack.submit()
    stack.when_calls(1)  # shards are running (the broker delivered them)
    stack.redis.kill()
    time.sleep(1.0)
    stack.redis.start()
    job = _assert_exactly_once_or_loud(stack, job_id)
    assert job["status"] == "succeeded", job  # the broker's queue and the groups survive a Redis restart
    again = stack.submit()  # and new jobs run afterwards
    assert _assert_exactly_once_or_loud(stack, again)["status"] == "succeeded"


def test_postgres_restarted_mid_job_every_group_once_or_a_loud_failure(stack: _Stack) -> None:
    job_id = stack.submit()
    stack.when_calls(1)
    stack.postgres.crash()
    time.sleep(1.0)
    stack.postgres.start()
    _assert_exactly_once_or_loud(stack, job_id)
    again = stack.submit()  # the stack recovers: a new job runs to the end
    assert _assert_exactly_once_or_loud(stack, again)["status"] == "succeeded"
