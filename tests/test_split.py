"""``trajforge up --split``: every service its own process on loopback, wired by the URL table.

A rollout job goes to the rollout process; its env is the envs process (``env.base_url``), reached
over a real WebSocket; the policy is the real local engine (SmolLM2 on CPU, a tiny budget). The
envs process's own metrics count the sessions the rollout process opened.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from shared.auth import create_key
from shared.settings import Settings
from shared.topology import url_table
from tests.conftest import REPO_ROOT

# Seven service processes and the local model loading in two of them (rollout and inference).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _base_port() -> int:
    from shared.topology import PORT_OFFSETS

    # Below the ephemeral range, so no outgoing connection takes one of them meanwhile.
    for _ in range(200):
        base = random.randrange(20000, 30000)
        if all(_free(base + i) for i in PORT_OFFSETS.values()):
            return base
    raise RuntimeError("no free block of ports for every service")


def _free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def split_stack(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """``trajforge up --split`` on the run's Postgres database (no Redis: work runs in each process)."""
    base = _base_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAJFORGE_")}
    env |= {"TRAJFORGE_HOME": str(tmp_path_factory.mktemp("split")), "TRAJFORGE_DATABASE_URL": pg_url,
            "TRAJFORGE_ENV": "test", "TRAJFORGE_LOG_LEVEL": "WARNING", "PYTHONPATH": str(REPO_ROOT),
            "TRAJFORGE_MODEL_CACHE_DIR": str(Settings().model_cache_path)}
    proc = subprocess.Popen([sys.executable, "-m", "services.cli", "up", "--split", "--base-port", str(base)],
                            cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE, text=True)
    table = url_table("loopback", base_port=base)
    try:
        deadline = time.monotonic() + 180
        while not _all_up(table):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the split stack did not come up"
            time.sleep(0.5)
        yield table
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for url in table.values():  # every child went with the parent
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"{url}/healthz", timeout=1)


def _all_up(table: dict[str, str]) -> bool:
    try:
        return all(httpx.get(f"{u}/healthz", timeout=1).status_code == 200 for u in table.values())
    except httpx.HTTPError:
        return False


@pytest.fixture
async def split_key(engine: AsyncEngine, settings: Settings) -> str:
    async with async_sessionmaker(engine)() as session:
        _, key = await create_key(session, "split-test", salt=settings.key_salt, scope="admin")
        await session.commit()
    return key


def _counter(text: str, name: str) -> float:
    found = re.search(rf'^{name}\{{env="counter",kind="ws"\}} ([0-9.e+]+)$', text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def test_each_service_is_its_own_process_and_a_job_crosses_them(split_stack: dict[str, str],
                                                                 split_key: str) -> None:
    table, auth = split_stack, {"authorization": f"Bearer {split_key}"}
    services = {n: httpx.get(f"{u}/healthz", timeout=5).json()["services"] for n, u in table.items()}
    assert services == {n: [n] for n in table}  # one service per process
    upstreams = httpx.get(f"{table['gateway']}/v1/gateway/upstreams", headers=auth, timeout=10).json()
    assert [u["url"] for u in upstreams] == [table["inference"]]  # the gateway's upstream is the inference process
    body: dict[str, Any] = {
        "tasks": [{"id": "c", "messages": [{"role": "user", "content": "Add 2 to the counter."}]}],
        "group_size": 2, "mode": "tokens", "env": {"base_url": f"{table['envs']}/envs/counter"},
        "sampling": {"temperature": 0.0, "max_tokens": 8},
        "limits": {"max_turns": 1, "max_tokens_per_turn": 8, "max_total_tokens": 4096, "timeout_s": 240}}
    job = httpx.post(f"{table['rollout']}/v1/rollouts", json=body, headers=auth, timeout=30)
    assert job.status_code == 202, job.text
    job_id, deadline = job.json()["id"], time.monotonic() + 280
    while (state := httpx.get(f"{table['rollout']}/v1/rollouts/{job_id}", headers=auth, timeout=10).json())[
            "status"] in ("pending", "running"):
        assert time.monotonic() < deadline, state
        time.sleep(1)
    assert state["status"] == "succeeded" and state["counts"]["trajectories"] == 2, state
    items = httpx.get(f"{table['rollout']}/v1/rollouts/{job_id}/trajectories", headers=auth, timeout=10).json()
    for item in items["items"]:
        assert item["stop_reason"] in ("stop", "max_turns", "length")
        tokens = item["tokens"]
        assert tokens["response_ids"] and len(tokens["loss_mask"]) == len(tokens["response_ids"])
        assert [t["function"]["name"] for t in item["tools"]] == ["add", "echo"]  # the envs process's /schema
    metrics = httpx.get(f"{table['envs']}/metrics", timeout=10).text
    assert _counter(metrics, "trajforge_env_resets_total") == 2  # one session per trajectory, in the envs process
