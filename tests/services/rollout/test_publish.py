"""The stream of stored groups is at least once: a group stored but never published goes out on the next run.

In-process shards against the real Postgres and Redis (DB 15); the policy is
SCRIPTED (tests/services/rollout/scripted.py).
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis
from sqlalchemy import select, update

from services.rollout import service
from services.rollout.publish import stream_key
from shared.db.models import TrajectoryGroupRow, TrajectoryRow
from shared.settings import Settings
from tests.conftest import REDIS_URL
from tests.services.rollout.test_service import Live, job_body

REDIS_TEST_URL = REDIS_URL.rsplit("/", 1)[0] + "/15"


@pytest.fixture
async def live_redis(settings: Settings) -> AsyncIterator[Live]:
    runner = Live(settings.model_copy(update={"rollout_poll_s": 0.05, "redis_url": REDIS_TEST_URL}))
    yield runner
    await runner.dispatcher.drain()
    await runner.engine.dispose()


async def _entries(job_id: uuid.UUID) -> list[dict[bytes, bytes]]:
    client = aioredis.from_url(REDIS_TEST_URL)
    try:
        return [fields for _, fields in await client.xrange(stream_key(job_id))]
    finally:
        await client.aclose()


async def _drop_stream(job_id: uuid.UUID) -> None:
    client = aioredis.from_url(REDIS_TEST_URL)
    try:
        await client.delete(stream_key(job_id))
    finally:
        await client.aclose()


async def _published(live: Live, job_id: uuid.UUID) -> dict[str, bool]:
    async with live.maker() as session:
        rows = (await session.execute(select(TrajectoryGroupRow.task_id, TrajectoryGroupRow.published_at)
                                      .where(TrajectoryGroupRow.job_id == job_id))).all()
    return {task_id: at is not None for task_id, at in rows}


async def test_stored_groups_are_published_and_marked(live_redis: Live) -> None:
    job_id = await live_redis.create(job_body("A1 first", "A1 second"))
    await live_redis.dispatcher.drain()
    entries = await _entries(job_id)
    assert sorted(e[b"task_id"] for e in entries) == [b"t0", b"t1"]
    assert await _published(live_redis, job_id) == {"t0": True, "t1": True}
    await _drop_stream(job_id)


async def test_group_committed_but_not_published_goes_out_on_the_next_run_exactly_once(live_redis: Live) -> None:
    job_id = await live_redis.create(job_body("A1 first", "A1 second"))
    await live_redis.dispatcher.drain()
    # A crash between the group's commit and its publication: the row says so, the stream lacks it.
    async with live_redis.maker() as session:
        await session.execute(update(TrajectoryGroupRow).values(published_at=None)
                              .where(TrajectoryGroupRow.job_id == job_id, TrajectoryGroupRow.task_id == "t1"))
        await session.commit()
    await _drop_stream(job_id)

    assert await service.run_shard(live_redis.maker, live_redis.settings, job_id, 0) == {"stored": 0, "groups": 0}
    [entry] = await _entries(job_id)
    async with live_redis.maker() as session:
        ids = list(await session.scalars(select(TrajectoryRow.id).where(
            TrajectoryRow.job_id == job_id, TrajectoryRow.task_id == "t1").order_by(TrajectoryRow.sample_index)))
        group_id = await session.scalar(select(TrajectoryGroupRow.id).where(
            TrajectoryGroupRow.job_id == job_id, TrajectoryGroupRow.task_id == "t1"))
    assert entry[b"task_id"] == b"t1" and entry[b"group_id"] == str(group_id).encode()
    assert json.loads(entry[b"trajectory_ids"]) == [str(i) for i in ids] and len(ids) == 2
    assert await _published(live_redis, job_id) == {"t0": True, "t1": True}

    await service.run_shard(live_redis.maker, live_redis.settings, job_id, 0)  # nothing left to send
    assert len(await _entries(job_id)) == 1
    await _drop_stream(job_id)


async def test_redis_refusing_the_entry_leaves_the_group_stored_and_unpublished(settings: Settings) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"redis://127.0.0.1:{sock.getsockname()[1]}/15"
    runner = Live(settings.model_copy(update={"rollout_poll_s": 0.05, "redis_url": dead}))
    try:
        job_id = await runner.create(job_body("A1 first"))
        await runner.dispatcher.drain()
        async with runner.maker() as session:
            job = await service.read_job(session, job_id)
        assert job.status == "succeeded" and job.done_groups == 1
        assert await _published(runner, job_id) == {"t0": False}  # the next run of the shard sends it
    finally:
        await runner.dispatcher.drain()
        await runner.engine.dispose()
