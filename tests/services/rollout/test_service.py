"""Rollout jobs end to end in-process against the real Postgres (committed data, own connections).

The policy is SCRIPTED (tests/services/rollout/scripted.py); the env, tools,
parser, reward scoring, storage and the queue's in-process runner are real.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

import services.rollout.tasks  # noqa: F401 - registers rollout.run_shard
from services.rollout import service
from services.rollout.schemas import RolloutJobCreate
from shared.db.models import RewardRow, TrajectoryGroupRow, TrajectoryRow
from shared.db.session import create_engine_for, make_sessionmaker
from shared.queue import InProcessDispatcher
from shared.settings import Settings
from tests.services.rollout import scripted  # noqa: F401 - registers the scripted policy and the hanging env

REWARD = {"components": [{"name": "tool_call", "weight": 1.0}, {"name": "length", "weight": 0.0}]}
TRUTH = {"decision": "tool_call", "tool_calls": [{"name": "respond", "arguments": {"content": "A1 is shipped."}}]}


def job_body(*requests: str, delay_s: float = 0.0, **extra: Any) -> RolloutJobCreate:
    """A job over the tool-routing env with the scripted policy, one task per request text."""
    tasks = [{"id": f"t{i}", "messages": [{"role": "user", "content": r}], "ground_truth": TRUTH}
             for i, r in enumerate(requests)]
    body: dict[str, Any] = {"tasks": tasks, "group_size": 2, "env": {"name": "tool_routing"}, "reward": REWARD,
                            "mode": "messages", "policy": {"backend": {"name": "scripted", "model": f"delay={delay_s}"}},
                            "limits": {"max_turns": 3, "timeout_s": 20, "tool_timeout_s": 0.3}}
    body.update(extra)
    return RolloutJobCreate.model_validate(body)


class Live:
    """Sessions on their own connections (so a running shard and a request never share one)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.engine = create_engine_for(settings)
        self.maker: async_sessionmaker[AsyncSession] = make_sessionmaker(self.engine)
        self.dispatcher = InProcessDispatcher(settings, self.maker)

    async def create(self, body: RolloutJobCreate) -> uuid.UUID:
        from shared.queue.dispatch import flush_after_commit

        async with self.maker() as session:
            read = await service.create_job(session, self.dispatcher, body)
            await session.commit()
            await flush_after_commit(session)
        return uuid.UUID(read.id)

    async def scalar(self, stmt: Any) -> Any:
        async with self.maker() as session:
            return await session.scalar(stmt)


@pytest.fixture
async def live(settings: Settings) -> AsyncIterator[Live]:
    runner = Live(settings.model_copy(update={"rollout_poll_s": 0.05, **scripted.HANGING_ENV}))
    yield runner
    await runner.dispatcher.drain()
    await runner.engine.dispose()


async def _trajectories(live: Live, job_id: uuid.UUID) -> list[TrajectoryRow]:
    async with live.maker() as session:
        stmt = select(TrajectoryRow).where(TrajectoryRow.job_id == job_id).order_by(
            TrajectoryRow.task_id, TrajectoryRow.sample_index)
        return list((await session.scalars(stmt)).all())


async def test_job_runs_scores_and_stores_every_group(live: Live) -> None:
    job_id = await live.create(job_body("What is the status of item A1?", "Status of A1 please", shard_size=1))
    await live.dispatcher.drain()
    async with live.maker() as session:
        job = await service.read_job(session, job_id)
    assert job.status == "succeeded" and job.done_groups == 2 and job.progress == 1.0
    assert job.counts["trajectories"] == 4 and job.counts["failed"] == 0
    rows = await _trajectories(live, job_id)
    assert [(r.task_id, r.sample_index) for r in rows] == [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)]
    first = rows[0]
    assert [m["role"] for m in first.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert first.stop_reason == "stop" and first.turns == 2
    assert first.messages[2]["content"] == "A1: shipped"  # the env's own observation
    assert first.meta["env_reward"] == 1.0 and first.meta["env_done"] is True
    assert first.steps[0]["parse_statuses"] == ["ok"]
    assert first.meta["advantage"] == 0.0 and first.meta["reward"] is not None  # equal rewards: no signal
    rewards = (await live.scalar(select(func.count()).select_from(RewardRow)
                                 .where(RewardRow.trajectory_id.in_([r.id for r in rows]))))
    assert rewards == 4 * 3  # tool_call + length + total per trajectory
    async with live.maker() as session:
        row = await session.scalar(select(RewardRow).where(RewardRow.trajectory_id == first.id,
                                                           RewardRow.component == "tool_call"))
    assert row is not None and row.version == "1" and row.spec_hash and row.weight == 1.0


async def test_running_a_shard_again_stores_nothing_twice(live: Live) -> None:
    job_id = await live.create(job_body("What is the status of item A1?"))
    await live.dispatcher.drain()
    again = await service.run_shard(live.maker, live.settings, job_id, 0)
    assert again == {"stored": 0, "groups": 0}
    # Even a group forced open again is claimed once: its rows already exist under the same keys.
    async with live.maker() as session:
        group = await session.scalar(select(TrajectoryGroupRow).where(TrajectoryGroupRow.job_id == job_id))
        group.status = "running"
        await session.commit()
    rerun = await service.run_shard(live.maker, live.settings, job_id, 0)
    assert rerun["stored"] == 1
    assert len(await _trajectories(live, job_id)) == 2
    async with live.maker() as session:
        job = await service.read_job(session, job_id)
    assert job.status == "succeeded" and job.done_groups == 1 and job.counts["trajectories"] == 2


async def test_cancel_stops_in_flight_groups(live: Live) -> None:
    job_id = await live.create(job_body("What is the status of item A1?", "again A1", delay_s=5.0))
    await asyncio.sleep(0.3)
    started = time.monotonic()
    async with live.maker() as session:
        read = await service.cancel_job(session, job_id)
        await session.commit()
    assert read.cancel_requested
    await live.dispatcher.drain()
    assert time.monotonic() - started < 3.0  # the 5 s policy calls were cancelled, not awaited
    async with live.maker() as session:
        job = await service.read_job(session, job_id)
        groups = await session.scalars(select(TrajectoryGroupRow.status).where(TrajectoryGroupRow.job_id == job_id))
        assert set(groups) == {"cancelled"}
    assert job.status == "cancelled" and job.done_groups == 0


async def test_cancel_before_start_cancels_pending_groups(live: Live) -> None:
    async with live.maker() as s:
        read = await service.create_job(s, live.dispatcher, job_body("A1?"))  # not sent: rollback drops it
        await s.commit()
    async with live.maker() as s:
        cancelled = await service.cancel_job(s, uuid.UUID(read.id))
        await s.commit()
    assert cancelled.status == "cancelled"


async def test_upstream_down_is_api_error_and_the_job_still_succeeds(live: Live) -> None:
    job_id = await live.create(job_body("the upstream is down", "What is the status of item A1?"))
    await live.dispatcher.drain()
    rows = await _trajectories(live, job_id)
    down = [r for r in rows if r.task_id == "t0"]
    assert {r.stop_reason for r in down} == {"api_error"}
    assert all(r.meta["error_code"] == "upstream_unavailable" for r in down)
    async with live.maker() as session:
        job = await service.read_job(session, job_id)
    assert job.status == "succeeded" and job.counts["stop_reason:api_error"] == 2 and job.counts["failed"] == 2


async def test_hanging_tool_times_out_into_an_error_observation(live: Live) -> None:
    job_id = await live.create(job_body("please hang", env={"name": "hanging"}, reward=None))
    await live.dispatcher.drain()
    rows = await _trajectories(live, job_id)
    assert len(rows) == 2
    tool_msg = rows[0].messages[2]
    assert tool_msg["role"] == "tool" and "timed out" in tool_msg["content"]
    assert rows[0].steps[0]["tool_statuses"][0]["error_type"] == "timeout"


async def test_unparseable_tool_calls_are_recorded(live: Live) -> None:
    job_id = await live.create(job_body("garbage please", limits={"max_turns": 2, "parse_failure_policy": "end"}))
    await live.dispatcher.drain()
    rows = await _trajectories(live, job_id)
    assert {r.stop_reason for r in rows} == {"tool_error"}
    assert rows[0].steps[0]["parse_statuses"] == ["invalid_json"] and rows[0].meta["error_code"] == "parse_error"


async def test_built_in_tools_come_from_the_tool_manager(live: Live) -> None:
    job_id = await live.create(job_body("What is the status of item A1?", env=None, tools=["calculator"],
                                        reward=None, limits={"max_turns": 2}))
    await live.dispatcher.drain()
    rows = await _trajectories(live, job_id)
    assert [t["function"]["name"] for t in rows[0].tools] == ["calculator"]
    assert "unknown tool 'query_status'" in rows[0].messages[2]["content"]  # the scripted call names an env tool
    assert rows[0].steps[0]["tool_statuses"][0]["error_type"] == "unknown_tool"
    assert rows[0].stop_reason == "max_turns" and rows[0].meta["reward"] is None


async def test_a_shard_that_cannot_start_fails_its_job_instead_of_hanging(live: Live) -> None:
    job_id = await live.create(job_body("A1?", policy={"backend": {"name": "broken"}}))
    await live.dispatcher.drain()
    async with live.maker() as session:
        job = await service.read_job(session, job_id)
    assert job.status == "failed" and "cannot be built" in (job.error or "")
