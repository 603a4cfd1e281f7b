"""The Redis stream of a job's stored groups, delivered at least once.

A group is stored (status ``done``) in its own transaction; only after that
commit is its entry sent to ``trajforge:rollout:{job}:groups`` and the row's
``published_at`` set. A crash between the commit and the send (or Redis
refusing it) leaves the group done but unpublished; the shard tries again at
the end of its run, and the next run of the shard sends it before anything
else. So every stored group reaches the stream at least once, and possibly
twice (a crash after the send, before ``published_at`` was written):
consumers dedupe on the entry's ``group_id``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shared.db.base import utcnow
from shared.db.models import TrajectoryGroupRow, TrajectoryRow

__all__ = ["GroupEntry", "group_entry", "mark_published", "publish_entry", "publish_unpublished", "stream_key",
           "unpublished_entries"]

_log = logging.getLogger(__name__)

GroupEntry = dict[str, str | bytes]
"""One stream entry: ``group_id``, ``task_id``, ``trajectory_ids`` (a JSON list)."""


def stream_key(job_id: uuid.UUID | str) -> str:
    """The Redis stream a job's completed groups are published to."""
    return f"trajforge:rollout:{job_id}:groups"


def group_entry(group_id: uuid.UUID, task_id: str, trajectory_ids: Sequence[uuid.UUID]) -> GroupEntry:
    """The stream entry of one stored group."""
    return {"group_id": str(group_id), "task_id": task_id,
            "trajectory_ids": orjson.dumps([str(i) for i in trajectory_ids])}


async def publish_entry(redis: Any, job_id: uuid.UUID, entry: GroupEntry) -> bool:
    """Send one entry; False when Redis refused (the row stays unpublished for the next run)."""
    try:
        await redis.xadd(stream_key(job_id), entry)
    except Exception as exc:  # noqa: BLE001 - the stream is a convenience; the database is the record
        _log.warning("could not publish group %s to Redis: %s", entry["group_id"], exc)
        return False
    return True


async def mark_published(session: AsyncSession, group_ids: Sequence[uuid.UUID]) -> None:
    """Record that these groups' entries were sent."""
    if group_ids:
        await session.execute(update(TrajectoryGroupRow).where(TrajectoryGroupRow.id.in_(list(group_ids)))
                              .values(published_at=utcnow()))
        await session.flush()


async def unpublished_entries(session: AsyncSession, job_id: uuid.UUID, shard_index: int) -> list[GroupEntry]:
    """Entries of the shard's done groups whose publication was never recorded, in task order."""
    stmt = (select(TrajectoryGroupRow.id, TrajectoryGroupRow.task_id)
            .where(TrajectoryGroupRow.job_id == job_id, TrajectoryGroupRow.shard_index == shard_index,
                   TrajectoryGroupRow.status == "done", TrajectoryGroupRow.published_at.is_(None))
            .order_by(TrajectoryGroupRow.task_id))
    groups = (await session.execute(stmt)).all()
    return [group_entry(gid, task_id, await _kept_ids(session, gid)) for gid, task_id in groups]


async def _kept_ids(session: AsyncSession, group_id: uuid.UUID) -> list[uuid.UUID]:
    stmt = (select(TrajectoryRow.id).where(TrajectoryRow.group_id == group_id, TrajectoryRow.attempt == 0)
            .order_by(TrajectoryRow.sample_index))
    return list((await session.scalars(stmt)).all())


async def publish_unpublished(maker: async_sessionmaker[AsyncSession], redis: Any, job_id: uuid.UUID,
                              shard_index: int) -> int:
    """Send the shard's done-but-unpublished groups (what a crash after commit left); returns how many."""
    if redis is None:
        return 0
    async with maker() as session:
        entries = await unpublished_entries(session, job_id, shard_index)
    sent = [uuid.UUID(str(e["group_id"])) for e in entries if await publish_entry(redis, job_id, e)]
    async with maker() as session:
        await mark_published(session, sent)
        await session.commit()
    return len(sent)
