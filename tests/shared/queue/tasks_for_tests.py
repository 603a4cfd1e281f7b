"""A queue task used by the queue tests: it records an effect, then may hold to be killed."""

from __future__ import annotations

import asyncio
import uuid

import redis.asyncio as aioredis

from shared.db.models import DatasetRowRow
from shared.db.upsert import insert_ignore
from shared.errors import ServiceUnavailable
from shared.queue import TaskContext, queue_task


@queue_task("tests.record_effect")
async def record_effect(ctx: TaskContext, *, dataset_id: str, index: int, hold_s: float, counter: str) -> dict[str, int]:
    """Write one dataset row keyed by (dataset, index); hold on the first attempt so a test can kill us."""
    async with ctx.sessionmaker() as session:
        written = await insert_ignore(
            session, DatasetRowRow,
            [{"dataset_id": uuid.UUID(dataset_id), "row_index": index, "data": {"attempt": ctx.attempt}}],
            conflict_columns=["dataset_id", "row_index"],
        )
        await session.commit()
    if ctx.settings.redis_url:
        client = aioredis.from_url(ctx.settings.redis_url)
        await client.incr(counter)
        await client.aclose()
    if ctx.attempt == 1 and hold_s > 0:
        await asyncio.sleep(hold_s)
    return {"written": written, "attempt": ctx.attempt}


@queue_task("tests.flaky", transient=(ServiceUnavailable,), max_retries=2)
async def flaky(ctx: TaskContext, *, fail_until: int, run: str) -> dict[str, int]:
    """Fail transiently on every attempt before ``fail_until``, then succeed (``run`` keeps keys apart)."""
    if ctx.attempt < fail_until:
        raise ServiceUnavailable(f"attempt {ctx.attempt} of a flaky task")
    return {"attempt": ctx.attempt}
