"""The gateway's upstream flapping (502s and timeouts) under a running job, on a real HTTP server.

The job's policy goes through the gateway (started for the shard in this process, as embedded);
its one upstream is ``Flaky``, a small real HTTP server on loopback that fails on a pattern written
in each task's prompt: ``502x2`` answers 502 to the first two attempts of every call, ``hangx1``
stalls past the upstream timeout once per call, ``502`` and ``hang`` always. The gateway retries
with backoff; what it cannot save ends that trajectory with ``api_error`` and the job finishes.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.responses import JSONResponse, Response

from services.gateway.testing_upstream import ServerThread
from shared.db.models import TrajectoryGroupRow
from shared.db.session import make_sessionmaker
from shared.settings import Settings
from tests.services.rollout.job_harness import rollout_app

# Generous for a busy machine: a steady answer must never look like a hang.
UPSTREAM_TIMEOUT_S = 1.5
BASE_BACKOFF_S = 0.05
ATTEMPTS = 3
_PATTERN = re.compile(r"(502|hang)(?:x(\d+))?")


class Flaky:
    """An OpenAI chat upstream that fails by the pattern in the prompt; every arrival is logged."""

    def __init__(self) -> None:
        self.arrivals: dict[str, list[float]] = defaultdict(list)
        self._lock = threading.Lock()
        self.app = FastAPI()
        self.app.add_api_route("/v1/chat/completions", self.chat, methods=["POST"])

    async def chat(self, request: Request) -> Response:
        import asyncio

        body = json.loads(await request.body())
        messages = body["messages"]
        user = next(m["content"] for m in messages if m["role"] == "user")
        turn = sum(m["role"] == "assistant" for m in messages)
        call = f"{user}|seed={body.get('seed')}"  # the episode seeds each member and turn apart
        with self._lock:
            self.arrivals[call].append(time.monotonic())
            attempt = len(self.arrivals[call])
        found = _PATTERN.search(user)
        if found and (found.group(2) is None or attempt <= int(found.group(2))):
            if found.group(1) == "502":
                return JSONResponse({"error": {"message": "bad gateway (flapping)"}}, status_code=502)
            deadline = time.monotonic() + UPSTREAM_TIMEOUT_S * 20  # far past the gateway's upstream timeout
            while time.monotonic() < deadline and not await request.is_disconnected():
                await asyncio.sleep(0.05)
        return JSONResponse(_reply(body, turn))


def _reply(body: dict[str, Any], turn: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "Let me compute." if turn == 0 else "It is 4."}
    if turn == 0:  # one tool turn, so a trajectory makes two policy calls
        message["tool_calls"] = [{"id": "c0", "type": "function",
                                  "function": {"name": "calculator", "arguments": json.dumps({"expression": "2+2"})}}]
    return {"id": "chatcmpl-flaky", "object": "chat.completion", "created": 0, "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if turn == 0 else "stop",
                         "token_ids": [1, 2, 3]}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}}


@pytest.fixture(scope="module")
def flaky() -> Iterator[tuple[Flaky, ServerThread]]:
    upstream = Flaky()
    server = ServerThread(upstream.app).start()
    yield upstream, server
    server.stop()


TASKS = {"steady": "ok", "flap502": "502x2 then fine", "flaphang": "hangx1 then fine", "down502": "502 always",
         "downhang": "hang always"}


async def test_a_flapping_upstream_is_retried_then_api_error_and_the_job_finishes(
        settings: Settings, engine: AsyncEngine, flaky: tuple[Flaky, ServerThread], tmp_path: Path) -> None:
    upstream, server = flaky
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({
        "upstreams": [{"model": "policy", "url": server.url, "name": "flaky", "timeout_s": UPSTREAM_TIMEOUT_S,
                       "return_token_ids": True, "logprobs": False}],
        "retry": {"max_attempts": ATTEMPTS, "base_s": BASE_BACKOFF_S, "max_backoff_s": 0.2, "jitter": 0.25}}))
    body = {"tasks": [{"id": k, "messages": [{"role": "user", "content": v}]} for k, v in TASKS.items()],
            "group_size": 2, "shard_size": 2, "mode": "messages", "tools": ["calculator"],
            "policy": {"model": "policy"}, "sampling": {"seed": 1},
            "limits": {"max_turns": 3, "timeout_s": 60, "max_api_retries": 1, "retry_backoff_s": 0.01}}
    async with rollout_app(settings, engine, gateway_config=str(config)) as harness:
        job, items = await harness.run(body)
        async with make_sessionmaker(engine)() as db:
            open_groups = await db.scalar(select(func.count()).select_from(TrajectoryGroupRow).where(
                TrajectoryGroupRow.job_id == job["id"], TrajectoryGroupRow.status.in_(("pending", "running"))))
        sessions = {i["metadata"]["session_id"]: i for i in items}
        rows = {sid: await harness.trace_rows(sid) for sid in sessions}

    # The job finished: every group submitted was stored, every trajectory has a stop reason, none stuck.
    assert job["status"] == "succeeded", job
    assert job["done_groups"] == job["total_groups"] == len(TASKS) and open_groups == 0
    assert job["counts"]["trajectories"] == len(items) == 2 * len(TASKS)
    by_task = defaultdict(list)
    for item in items:
        assert item["stop_reason"] is not None
        by_task[item["task_id"]].append(item)
    # What retries saved ends normally; what they could not ends that trajectory with api_error.
    for task in ("steady", "flap502", "flaphang"):
        assert [i["stop_reason"] for i in by_task[task]] == ["stop", "stop"], [(i["metadata"], i["messages"]) for i in by_task[task]]
        assert all(i["turns"] == 2 for i in by_task[task])
    for task, code in (("down502", "upstream_error"), ("downhang", "upstream_timeout")):
        assert [i["stop_reason"] for i in by_task[task]] == ["api_error", "api_error"]
        assert {i["metadata"]["error_code"] for i in by_task[task]} == {code}
    assert job["counts"]["stop_reason:api_error"] == 4 and job["counts"]["failed"] == 4

    # Every policy call is one trace, failed ones included, with the gateway's retries on it.
    for sid, item in sessions.items():
        task, trace = item["task_id"], rows[sid]
        if task in ("steady", "flap502", "flaphang"):
            assert [r.status for r in trace] == ["ok", "ok"]
            # At least what the pattern forces (a busy machine may add a spurious timeout, retried too).
            assert all(r.retries >= {"steady": 0, "flap502": 2, "flaphang": 1}[task] for r in trace)
        elif task == "down502":  # a 502 after the gateway's retries is not retried again by the episode
            assert [(r.status, r.status_code) for r in trace] == [("error", 502)]
        else:  # a timeout is: once more (max_api_retries 1), then api_error
            assert [(r.status, r.error_code) for r in trace] == [("error", "upstream_timeout")] * 2

    # The gateway's attempts at one call are spaced by its backoff (at least base - jitter), never hammered.
    flapped = {c: t for c, t in upstream.arrivals.items() if c.startswith(("502x2", "502 always"))}
    assert len(flapped) == 2 + 2 + 2  # 502x2: two members x two turns; 502 always: two members x one turn
    for call, times in flapped.items():
        assert len(times) == ATTEMPTS, call
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        assert all(g >= BASE_BACKOFF_S * 0.75 for g in gaps), (call, gaps)


async def test_split_the_shard_reaches_the_gateway_by_its_url(
        settings: Settings, engine: AsyncEngine, flaky: tuple[Flaky, ServerThread], tmp_path: Path) -> None:
    # TRAJFORGE_GATEWAY_URL set: the same client goes over loopback HTTP to a gateway in its own server.
    from services.gateway.app import SERVICE as GATEWAY
    from shared.web import create_app
    from tests.conftest import LoopbackServer

    _, upstream = flaky
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"upstreams": [{"model": "policy", "url": upstream.url, "name": "flaky"}]}))
    gateway = create_app(GATEWAY, settings=settings.model_copy(update={"gateway_config": str(config)}))
    body = {"tasks": [{"id": "split", "messages": [{"role": "user", "content": "ok over the wire"}]}],
            "group_size": 2, "mode": "messages", "tools": ["calculator"], "limits": {"max_turns": 3, "timeout_s": 60}}
    with LoopbackServer(gateway) as server:
        async with rollout_app(settings, engine, gateway_url=server.url) as harness:
            job, items = await harness.run(body)
            # Two turns each; the gateway's sink writes them in a batch after answering, so wait for them.
            rows = {i["metadata"]["session_id"]: await harness.trace_rows(i["metadata"]["session_id"], at_least=2)
                    for i in items}
    assert job["status"] == "succeeded" and job["counts"]["trajectories"] == 2, job
    assert all(i["stop_reason"] == "stop" and i["turns"] == 2 for i in items)
    assert {len(r) for r in rows.values()} == {2} and all(t.status == "ok" for r in rows.values() for t in r)
