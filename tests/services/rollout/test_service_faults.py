"""Rollouts calling the tools and envs services on loopback: registered tools, and services failing mid-job.

The policy is SCRIPTED in token mode (tests/services/rollout/test_remote_env.py); the services are
real uvicorn servers on loopback with their own database connections. Each fault test checks the
counts: every submitted group is stored, every trajectory has a stop reason, nothing is left running.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

import services.rollout.tasks  # noqa: F401 - registers rollout.run_shard
from services.app import service_spec
from services.rollout import service
from services.rollout.schemas import RolloutJobCreate
from shared.auth import create_key
from shared.clients import Endpoints, ToolsClient
from shared.db.models import TrajectoryGroupRow, TrajectoryRow
from shared.settings import Settings
from shared.web import create_app
from tests.conftest import LoopbackServer, free_port
from tests.services.rollout.test_remote_env import _example
from tests.services.rollout.test_service import Live
from tests.services.rollout.token_scripted import TokenScripted


def _job(model: str, *, tasks: int = 2, **spec: Any) -> RolloutJobCreate:
    body = {"tasks": [{"id": f"t{i}", "messages": [{"role": "user", "content": f"Question {i}"}],
                       "ground_truth": {"answer": "14"}} for i in range(tasks)],
            "group_size": 2, "mode": "tokens", "tool_parser": "hermes",
            "policy": {"backend": {"name": "scripted_tokens", "model": model}},
            "limits": {"max_turns": 3, "max_tokens_per_turn": 64, "max_total_tokens": 2048, "timeout_s": 60,
                       "tool_timeout_s": 20}, **spec}
    return RolloutJobCreate.model_validate(body)


@pytest.fixture
async def live_factory(settings: Settings) -> AsyncIterator[Any]:
    made: list[Live] = []

    def make(**urls: str) -> Live:
        made.append(Live(settings.model_copy(update={"rollout_poll_s": 0.05, **urls})))
        return made[-1]

    yield make
    for live in made:
        await live.dispatcher.drain()
        await live.engine.dispose()


async def _settled(live: Live, job_id: uuid.UUID) -> tuple[Any, list[TrajectoryRow]]:
    """Drain the job and check the counts every fault test asserts."""
    await asyncio.wait_for(live.dispatcher.drain(), 120)
    async with live.maker() as session:
        job = await service.read_job(session, job_id)
        stored = await session.scalar(select(func.count()).select_from(TrajectoryGroupRow).where(
            TrajectoryGroupRow.job_id == job_id, TrajectoryGroupRow.status == "done"))
        rows = list((await session.scalars(select(TrajectoryRow).where(TrajectoryRow.job_id == job_id).order_by(
            TrajectoryRow.task_id, TrajectoryRow.sample_index))).all())
    assert job.status in ("succeeded", "failed") and stored == job.total_groups == job.done_groups
    assert len(rows) == 2 * job.total_groups and all(r.stop_reason for r in rows)
    return job, rows


def _started(policies: list[TokenScripted]) -> int:
    return sum(p.started for p in policies)


async def _when_started(policies: list[TokenScripted], count: int, within_s: float = 60) -> None:
    deadline = time.monotonic() + within_s
    while _started(policies) < count:
        assert time.monotonic() < deadline, "the shard never called the policy"
        await asyncio.sleep(0.02)


def _lookup_backend() -> FastAPI:
    app = FastAPI()

    @app.post("/lookup")
    async def lookup(body: dict[str, Any]) -> dict[str, Any]:
        return {"text": f"{body.get('item')} is in aisle 7"}

    return app


async def test_registered_http_tools_are_run_by_the_tools_service(
        settings: Settings, live_factory: Any, token_policies: list[TokenScripted]) -> None:
    with LoopbackServer(_lookup_backend()) as backend, \
            LoopbackServer(create_app(service_spec("tools"), settings=settings)) as tools:
        live = live_factory(tools_url=tools.url)
        async with live.maker() as session:
            _, key = await create_key(session, "register", salt=settings.key_salt)
            await session.commit()
        async with Endpoints(live.settings) as endpoints, await ToolsClient.open(endpoints, api_key=key) as client:
            await client.register({"name": "lookup_item", "description": "Where an item is.",
                                   "parameters": {"type": "object", "properties": {"item": {"type": "string"}}},
                                   "url": f"{backend.url}/lookup"})
        job_id = await live.create(_job("lookup", tools=["lookup_item", "calculator"]))
        job, rows = await _settled(live, job_id)
    assert job.status == "succeeded"
    for row in rows:
        assert [t["function"]["name"] for t in row.tools] == ["lookup_item", "calculator"]
        observed = [json.loads(m["content"]) for m in row.messages if m["role"] == "tool"]
        assert observed == [{"text": "A1 is in aisle 7"}]  # what the registered tool's URL answered
        assert row.stop_reason == "stop" and row.turns == 2


async def test_the_tools_service_down_mid_job_gives_tool_error_observations(
        settings: Settings, live_factory: Any, token_policies: list[TokenScripted]) -> None:
    tools = LoopbackServer(create_app(service_spec("tools"), settings=settings)).__enter__()
    live = live_factory(tools_url=tools.url)
    try:
        seen = _started(token_policies)
        job_id = await live.create(_job("calc,delay=1.0", tools=["calculator"]))
        await _when_started(token_policies, seen + 1)  # the shard listed the tools, the first turns are in flight
    finally:
        tools.__exit__(None, None, None)
    job, rows = await _settled(live, job_id)
    assert job.status == "succeeded"
    for row in rows:
        observations = [m["content"] for m in row.messages if m["role"] == "tool"]
        assert observations and observations[0].startswith("Error: the tools service failed")
        assert row.steps[0]["tool_statuses"][0]["ok"] is False and row.stop_reason == "stop"


async def test_the_envs_service_killed_mid_job_ends_trajectories_with_the_cause_then_a_restart_serves(
        settings: Settings, live_factory: Any, token_policies: list[TokenScripted]) -> None:
    port = free_port()
    envs = LoopbackServer(create_app(service_spec("envs"), settings=settings), port=port).__enter__()
    live = live_factory(envs_url=envs.url)
    base = f"{envs.url}/envs/tool_routing"
    try:
        seen = _started(token_policies)
        job_id = await live.create(_example(env={"base_url": base},
                                            policy={"backend": {"name": "scripted_tokens",
                                                                "model": "routing,delay=1.0"}}))
        await _when_started(token_policies, seen + 1)  # sessions are open, the first turns are in flight
    finally:
        envs.__exit__(None, None, None)
    _, rows = await _settled(live, job_id)
    for row in rows:
        assert row.stop_reason == "api_error", row.meta
        assert row.meta["error_code"] in ("upstream_unavailable", "upstream_timeout")
        assert "env" in row.meta["error"]
    with LoopbackServer(create_app(service_spec("envs"), settings=settings), port=port):
        again = await live.create(_example(env={"base_url": base}))
        job, rows = await _settled(live, again)
    assert job.status == "succeeded" and {r.stop_reason for r in rows} == {"stop"}


async def test_the_reward_service_down_stores_unscored_pending_and_a_rescore_fills_them(
        settings: Settings, live_factory: Any, token_policies: list[TokenScripted]) -> None:
    from shared.clients import RewardClient
    from shared.db.models import RewardRow

    port = free_port()
    spec = {"components": [{"name": "length", "weight": 1.0}, {"name": "format", "weight": 0.0}]}
    live = live_factory(reward_url=f"http://127.0.0.1:{port}", client_attempts=1)
    job_id = await live.create(_job("calc", tools=["calculator"], reward=spec))
    job, rows = await _settled(live, job_id)
    assert job.status == "succeeded" and job.counts["unscored"] == len(rows) == 4
    assert all(r.meta["reward_status"] == "pending" and r.meta["reward"] is None and r.reward is None for r in rows)
    ids = [r.id for r in rows]
    assert not await live.scalar(select(func.count()).select_from(RewardRow).where(RewardRow.trajectory_id.in_(ids)))
    with LoopbackServer(create_app(service_spec("reward"), settings=settings), port=port):
        async with live.maker() as session:
            _, key = await create_key(session, "rescore", salt=settings.key_salt)
            await session.commit()
        async with Endpoints(live.settings) as endpoints, await RewardClient.open(endpoints, api_key=key) as reward:
            started = await reward.rescore(str(job_id), spec)
            deadline = time.monotonic() + 60
            while not (progress := await reward.rescore_progress(str(job_id), started["spec_hash"]))["done"]:
                assert time.monotonic() < deadline, progress
                await asyncio.sleep(0.1)
    assert progress["scored"] == 4 and progress["pending"] == 0, progress
    totals = await live.scalar(select(func.count()).select_from(RewardRow).where(
        RewardRow.trajectory_id.in_(ids), RewardRow.component == "total"))
    assert totals == 4  # filled without re-running a rollout
    rescored_job, rescored = await _settled(live, job_id)
    assert len(rescored) == 4
    # The reward service handed its totals back through the rollout API: the rollout's own copy is filled,
    # the members are no longer pending and the job counts none unscored.
    assert all(r.reward is not None for r in rescored)
    assert all(r.meta["reward_status"] == "scored" and "reward_error" not in r.meta for r in rescored)
    assert rescored_job.counts["unscored"] == 0


class _RecordRefused:
    """The reward app, except that it cannot keep scores (``/v1/rewards/record`` answers 503)."""

    def __init__(self, app: Any) -> None:
        self.app, self.refused = app, 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/v1/rewards/record":
            self.refused += 1
            body = json.dumps({"status": 503, "code": "service_unavailable", "detail": "down for the test"}).encode()
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/problem+json")]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


async def test_scores_the_reward_service_computed_but_could_not_keep_stay_pending_for_a_rescore(
        settings: Settings, live_factory: Any, token_policies: list[TokenScripted]) -> None:
    from shared.db.models import RewardRow

    spec = {"components": [{"name": "length", "weight": 1.0}]}
    reward = _RecordRefused(create_app(service_spec("reward"), settings=settings))
    with LoopbackServer(reward) as server:
        live = live_factory(reward_url=server.url, client_attempts=1)
        job_id = await live.create(_job("calc", tools=["calculator"], reward=spec))
        job, rows = await _settled(live, job_id)
    assert reward.refused == job.total_groups == 2  # one record per stored group, each refused
    assert job.status == "succeeded" and job.counts["unscored"] == len(rows) == 4
    # The scores were computed (they feed the advantages), but no provenance row exists yet.
    assert all(r.meta["reward_status"] == "pending" and r.meta["reward"] is not None for r in rows)
    assert all(r.reward == r.meta["reward"] for r in rows)  # the rollout keeps the total it was given
    assert all("down for the test" in r.meta["reward_error"] for r in rows)
    assert not await live.scalar(select(func.count()).select_from(RewardRow).where(
        RewardRow.trajectory_id.in_([r.id for r in rows])))
