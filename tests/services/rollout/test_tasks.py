"""Rollout shards on real Celery workers: the local model end to end, and a killed worker.

Each test starts worker subprocesses on a queue of its own (Redis DB 15) against
the test database; what they write is committed, so the tests read it back
through their own connections.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from sqlalchemy import func, select

from services.envs.routing_env import SYSTEM_PROMPT
from services.inference.config import engine_config
from services.reward.repository import read_scores
from services.rollout import service
from services.rollout.app import SERVICE
from services.rollout.publish import stream_key
from services.rollout.schemas import RolloutJobCreate
from shared.auth import create_key
from shared.db.models import TaskExecutionRow, TrajectoryGroupRow, TrajectoryRow
from shared.db.session import create_engine_for, make_sessionmaker
from shared.queue import CeleryDispatcher, task_key
from shared.queue.dispatch import flush_after_commit
from shared.settings import Settings
from shared.toolcalls.prompt import template_handles_tools
from shared.web import create_app
from tests.services.rollout.test_service import REWARD, TRUTH
from tests.workers import REDIS_TEST_URL, Workers, wait_until


@pytest.fixture
def workers(settings: Settings, tmp_path: Path) -> Iterator[Workers]:
    # The converted model weights this machine already cached (a fresh home would convert again).
    w = Workers(settings, tmp_path, prefix="rollout", include=["tests.services.rollout.scripted"],
                visibility_timeout_s=3, env={"TRAJFORGE_ROLLOUT_POLL_S": "0.2",
                                             "TRAJFORGE_MODEL_CACHE_DIR": str(engine_config().cache_dir)})
    yield w
    w.stop_all()


async def _create(settings: Settings, body: RolloutJobCreate) -> uuid.UUID:
    engine = create_engine_for(settings)
    try:
        async with make_sessionmaker(engine)() as session:
            read = await service.create_job(session, CeleryDispatcher(settings), body)
            await session.commit()
            await flush_after_commit(session)
    finally:
        await engine.dispose()
    return uuid.UUID(read.id)


async def _query(settings: Settings, fn: Callable[[Any], Any]) -> Any:
    engine = create_engine_for(settings)
    try:
        async with make_sessionmaker(engine)() as session:
            return await fn(session)
    finally:
        await engine.dispose()


def _job(settings: Settings, job_id: uuid.UUID) -> Any:
    return asyncio.run(_query(settings, lambda s: service.read_job(s, job_id)))


def _rows(settings: Settings, job_id: uuid.UUID) -> list[TrajectoryRow]:
    async def fetch(session: Any) -> list[TrajectoryRow]:
        stmt = select(TrajectoryRow).where(TrajectoryRow.job_id == job_id).order_by(
            TrajectoryRow.task_id, TrajectoryRow.sample_index)
        return list((await session.scalars(stmt)).all())

    return asyncio.run(_query(settings, fetch))


def test_local_model_group_of_four_is_token_exact_and_scored(workers: Workers, smol_tokenizer: Any) -> None:
    task = {"id": "route-a1", "ground_truth": TRUTH, "metadata": {"source": "tool_routing"},
            "messages": [{"role": "system", "content": SYSTEM_PROMPT},
                         {"role": "user", "content": "What is the status of item A1?"}]}
    body = RolloutJobCreate.model_validate({
        "tasks": [task], "group_size": 4, "env": {"name": "tool_routing"}, "reward": REWARD, "mode": "tokens",
        "sampling": {"temperature": 0.8, "seed": 7, "max_tokens": 24},
        "limits": {"max_turns": 2, "max_tokens_per_turn": 24, "max_total_tokens": 2048, "timeout_s": 120}})
    workers.start()
    job_id = asyncio.run(_create(workers.settings, body))
    wait_until(lambda: _job(workers.settings, job_id).status != "pending" and
          _job(workers.settings, job_id).status != "running", 240, "the job to finish", workers.tail)
    job = _job(workers.settings, job_id)
    assert job.status == "succeeded" and job.counts["trajectories"] == 4, workers.tail()
    rows = _rows(workers.settings, job_id)
    assert [r.sample_index for r in rows] == [0, 1, 2, 3]
    for row in rows:
        assert row.prompt_ids and row.response_ids and len(row.loss_mask) == len(row.response_ids), (
            row.stop_reason, row.meta.get("error"))
        sampled = [lp for lp, m in zip(row.logprobs, row.loss_mask, strict=True) if m == 1]
        assert sampled and all(isinstance(lp, float) for lp in sampled)
        decoded = smol_tokenizer.decode(row.prompt_ids + row.response_ids, skip_special_tokens=False)
        rendered = smol_tokenizer.apply_chat_template(row.messages, tools=row.tools or None, tokenize=False,
                                                      add_generation_prompt=False)
        if row.tools and not template_handles_tools(smol_tokenizer):
            # SmolLM2's template drops tools, so the rollout offers them in the system prompt; the
            # database keeps JSON objects, not their key order, so that block is compared as JSON.
            head, _, decoded = decoded.partition("<|im_end|>")
            schemas = head.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0].splitlines()
            assert [json.loads(line) for line in schemas] == row.tools
            system, _, rendered = rendered.partition("<|im_end|>")
            assert head.startswith(system)  # the task's own system prompt, then the tool block
        # Token-exact: the ids decode to the rendered conversation, up to the template's closing tail
        # (a turn cut by max_tokens never sampled its end-of-turn token).
        assert rendered.startswith(decoded) and rendered[len(decoded):] in ("", "\n", "<|im_end|>\n"), (
            decoded, rendered)
        scores = asyncio.run(_query(workers.settings, lambda s, r=row: read_scores(s, r.id)))
        assert {s.component for s in scores} == {"tool_call", "length", "total"}
        assert all(s.spec_hash and s.version for s in scores)
        assert "advantage" in row.meta and row.meta["env_reward"] is not None
    [(_, entry)] = redis.Redis.from_url(REDIS_TEST_URL).xrange(stream_key(job_id))
    assert json.loads(entry[b"trajectory_ids"]) == [str(r.id) for r in rows]
    assert entry[b"task_id"] == b"route-a1"


def test_killed_worker_mid_job_leaves_every_group_exactly_once(workers: Workers) -> None:
    tasks = [{"id": f"t{i}", "messages": [{"role": "user", "content": text}], "ground_truth": TRUTH}
             for i, text in enumerate(["A1 quick", "A1 slow", "A1 quick again", "A1 quick too"])]
    body = RolloutJobCreate.model_validate({
        "tasks": tasks, "group_size": 2, "env": {"name": "tool_routing"}, "reward": REWARD, "mode": "messages",
        "shard_size": 2, "policy": {"backend": {"name": "scripted", "model": "delay=0.5"}},
        "limits": {"max_turns": 3}})
    first = workers.start()
    job_id = asyncio.run(_create(workers.settings, body))
    wait_until(lambda: _job(workers.settings, job_id).done_groups >= 1, 60, "the first stored group", workers.tail)
    workers.kill(first)  # mid-shard: t0 stored, the slow t1 of the same shard still in flight
    assert _job(workers.settings, job_id).done_groups < 4
    workers.start()
    wait_until(lambda: _job(workers.settings, job_id).status == "succeeded", 90, "the job to succeed", workers.tail)
    job = _job(workers.settings, job_id)
    assert job.done_groups == 4 and job.counts["trajectories"] == 8 and job.counts["failed"] == 0
    rows = _rows(workers.settings, job_id)
    assert sorted((r.task_id, r.sample_index) for r in rows) == [(f"t{i}", m) for i in range(4) for m in range(2)]

    async def executions(session: Any) -> list[int]:
        keys = [task_key(service.RUN_SHARD_TASK, {"job_id": str(job_id), "shard_index": i}) for i in range(2)]
        return [int((await session.get(TaskExecutionRow, k)).attempts) for k in keys]

    async def groups(session: Any) -> set[str]:
        stmt = select(TrajectoryGroupRow.status).where(TrajectoryGroupRow.job_id == job_id)
        return set((await session.scalars(stmt)).all())

    assert asyncio.run(_query(workers.settings, executions))[0] == 2  # shard 0 really ran twice
    assert asyncio.run(_query(workers.settings, groups)) == {"done"}
    count = asyncio.run(_query(workers.settings, lambda s: s.scalar(
        select(func.count()).select_from(TrajectoryRow).where(TrajectoryRow.job_id == job_id))))
    assert count == 8


async def _cancel_over_http(settings: Settings, job_id: uuid.UUID) -> httpx.Response:
    """POST /v1/rollouts/{id}/cancel to the rollout app on its own connections (committed, seen by the worker)."""
    engine = create_engine_for(settings)
    try:
        async with make_sessionmaker(engine)() as session:
            _, key = await create_key(session, "cancel-test", salt=settings.key_salt)
            await session.commit()
    finally:
        await engine.dispose()
    app = create_app(SERVICE, settings=settings)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test",
            headers={"authorization": f"Bearer {key}"}) as client:
        return await client.post(f"/v1/rollouts/{job_id}/cancel")


def _calls(record: Path) -> dict[str, int]:
    lines = record.read_text().splitlines() if record.exists() else []
    return {what: sum(line.startswith(what + " ") for line in lines) for what in ("start", "done", "cancelled")}


def test_cancel_over_http_stops_the_running_shard_on_a_worker(workers: Workers, tmp_path: Path) -> None:
    record = tmp_path / "calls.log"
    tasks = [{"id": f"t{i}", "messages": [{"role": "user", "content": f"A1 number {i}"}], "ground_truth": TRUTH}
             for i in range(3)]
    body = RolloutJobCreate.model_validate({
        "tasks": tasks, "group_size": 2, "env": {"name": "tool_routing"}, "reward": REWARD, "mode": "messages",
        "shard_size": 2, "policy": {"backend": {"name": "scripted", "model": f"delay=30,record={record}"}},
        "limits": {"max_turns": 3, "timeout_s": 120}})
    workers.start()
    job_id = asyncio.run(_create(workers.settings, body))
    # Shard 0 runs: both groups' first policy calls (30 s each) are in flight; shard 1 waits in the queue.
    wait_until(lambda: _calls(record)["start"] >= 4, 60, "shard 0's policy calls", workers.tail)
    started = time.monotonic()
    reply = asyncio.run(_cancel_over_http(workers.settings, job_id))
    assert reply.status_code == 200 and reply.json()["cancel_requested"] is True, reply.text
    wait_until(lambda: _job(workers.settings, job_id).status == "cancelled", 5, "the job to end cancelled", workers.tail)
    assert time.monotonic() - started < 5.0
    calls = _calls(record)
    assert calls == {"start": 4, "done": 0, "cancelled": 4}, calls  # every in-flight call was cancelled

    async def states(session: Any) -> tuple[set[str], list[str | None]]:
        groups = await session.scalars(select(TrajectoryGroupRow.status).where(TrajectoryGroupRow.job_id == job_id))
        keys = [task_key(service.RUN_SHARD_TASK, {"job_id": str(job_id), "shard_index": i}) for i in range(2)]
        runs = [await session.get(TaskExecutionRow, k) for k in keys]
        return set(groups), [r.status if r else None for r in runs]

    # The queued shard 1 runs too, finds the job cancelled and stops at once: nothing is left running.
    wait_until(lambda: asyncio.run(_query(workers.settings, states))[1] == ["succeeded", "succeeded"], 10,
          "both shard tasks to finish", workers.tail)
    assert asyncio.run(_query(workers.settings, states))[0] == {"cancelled"}
    job = _job(workers.settings, job_id)
    assert job.done_groups == 0 and _rows(workers.settings, job_id) == []
