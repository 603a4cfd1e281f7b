"""Rollout storage: jobs, groups and trajectories (every function flushes; the caller commits).

A group is claimed for writing with a guarded update (``status`` not yet
terminal), so a redelivered shard that finishes a group someone else already
stored writes nothing; trajectories go in with ``insert_ignore`` keyed on
(group_id, sample_index, attempt) and get ids derived from that key.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from shared.db.locking import locked_row
from shared.db.models import RolloutJobRow, TrajectoryGroupRow, TrajectoryRow
from shared.db.upsert import insert_ignore
from shared.errors import NotFound
from shared.schema import Trajectory

__all__ = [
    "TERMINAL_GROUP",
    "add_job",
    "cancel_pending_groups",
    "claim_group",
    "count_groups",
    "count_trajectories",
    "count_open_groups",
    "fail_group",
    "get_job",
    "keep_rewards",
    "list_groups",
    "lock_job",
    "mark_groups",
    "mark_reward_pending",
    "open_groups",
    "page_trajectories",
    "trajectory_from_row",
    "trajectory_id",
    "trajectory_rows",
    "write_trajectories",
]

TERMINAL_GROUP = ("done", "cancelled", "failed")


def trajectory_id(group_id: uuid.UUID, member: int, attempt: int) -> uuid.UUID:
    """A trajectory's id, derived from its group key (a retry makes the same id)."""
    return uuid.uuid5(group_id, f"{member}:{attempt}")


def trajectory_from_row(row: TrajectoryRow) -> Trajectory:
    """The schema view of a stored trajectory; raises ``ValidationError`` for unusable stored data."""
    return Trajectory.model_validate({
        "id": str(row.id), "group_id": str(row.group_id) if row.group_id else None,
        "sample_index": row.sample_index, "messages": row.messages or [], "tools": row.tools or [],
        "turns": row.turns, "stop_reason": row.stop_reason, "truncated": row.truncated,
        "steps": row.steps or [], "metadata": row.meta or {},
    })


async def add_job(session: AsyncSession, spec: dict[str, Any], tasks: Sequence[dict[str, Any]],
                  *, shard_size: int) -> RolloutJobRow:
    """Store a job and one pending group per task, sharded ``shard_size`` groups apiece."""
    job = RolloutJobRow(spec=spec, status="pending", total_groups=len(tasks), done_groups=0, counts={})
    session.add(job)
    await session.flush()
    session.add_all(TrajectoryGroupRow(job_id=job.id, task_id=t["id"], shard_index=i // shard_size, task=t,
                                       status="pending", summary={}) for i, t in enumerate(tasks))
    await session.flush()
    return job


async def get_job(session: AsyncSession, job_id: uuid.UUID) -> RolloutJobRow:
    """The job; 404 when there is none."""
    job = await session.get(RolloutJobRow, job_id, populate_existing=True)
    if job is None:
        raise NotFound(f"no rollout job with id {job_id}", param="id")
    return job


async def lock_job(session: AsyncSession, job_id: uuid.UUID) -> RolloutJobRow:
    """The job row locked for update (counters change under this lock)."""
    job = await locked_row(session, RolloutJobRow, job_id)
    if job is None:
        raise NotFound(f"no rollout job with id {job_id}", param="id")
    return job


async def open_groups(session: AsyncSession, job_id: uuid.UUID, shard_index: int) -> list[TrajectoryGroupRow]:
    """The shard's groups not yet done or cancelled, in task order."""
    stmt = (select(TrajectoryGroupRow)
            .where(TrajectoryGroupRow.job_id == job_id, TrajectoryGroupRow.shard_index == shard_index,
                   TrajectoryGroupRow.status.not_in(TERMINAL_GROUP))
            .order_by(TrajectoryGroupRow.created_at, TrajectoryGroupRow.task_id))
    return list((await session.scalars(stmt)).all())


async def list_groups(session: AsyncSession, job_id: uuid.UUID, *, status: str | None = None
                      ) -> list[TrajectoryGroupRow]:
    """The job's groups (optionally of one status), oldest update first."""
    stmt = select(TrajectoryGroupRow).where(TrajectoryGroupRow.job_id == job_id)
    if status is not None:
        stmt = stmt.where(TrajectoryGroupRow.status == status)
    stmt = stmt.order_by(TrajectoryGroupRow.updated_at, TrajectoryGroupRow.task_id)
    return list((await session.scalars(stmt.execution_options(populate_existing=True))).all())


async def mark_groups(session: AsyncSession, group_ids: Sequence[uuid.UUID], status: str) -> None:
    """Set the status of groups that are not terminal yet."""
    if group_ids:
        await session.execute(update(TrajectoryGroupRow)
                              .where(TrajectoryGroupRow.id.in_(list(group_ids)),
                                     TrajectoryGroupRow.status.not_in(TERMINAL_GROUP))
                              .values(status=status))
        await session.flush()


async def fail_group(session: AsyncSession, group_id: uuid.UUID, error: str) -> None:
    """Record that a group could not run at all (its trajectories could not even start)."""
    await session.execute(update(TrajectoryGroupRow)
                          .where(TrajectoryGroupRow.id == group_id,
                                 TrajectoryGroupRow.status.not_in(TERMINAL_GROUP))
                          .values(status="failed", summary={"error": error}))
    await session.flush()


async def cancel_pending_groups(session: AsyncSession, job_id: uuid.UUID) -> None:
    """Cancel every group no shard has started."""
    await session.execute(update(TrajectoryGroupRow)
                          .where(TrajectoryGroupRow.job_id == job_id, TrajectoryGroupRow.status == "pending")
                          .values(status="cancelled"))
    await session.flush()


async def count_trajectories(session: AsyncSession, job_id: uuid.UUID) -> int:
    """How many trajectories the job stored."""
    stmt = select(func.count()).select_from(TrajectoryRow).where(TrajectoryRow.job_id == job_id)
    return int(await session.scalar(stmt) or 0)


async def count_groups(session: AsyncSession, job_id: uuid.UUID, *, status: str) -> int:
    """Groups of the job in one status."""
    stmt = (select(func.count()).select_from(TrajectoryGroupRow)
            .where(TrajectoryGroupRow.job_id == job_id, TrajectoryGroupRow.status == status))
    return int(await session.scalar(stmt) or 0)


async def count_open_groups(session: AsyncSession, job_id: uuid.UUID) -> int:
    """Groups of the job that are neither done nor cancelled."""
    stmt = (select(func.count()).select_from(TrajectoryGroupRow)
            .where(TrajectoryGroupRow.job_id == job_id, TrajectoryGroupRow.status.not_in(TERMINAL_GROUP)))
    return int(await session.scalar(stmt) or 0)


async def claim_group(session: AsyncSession, group_id: uuid.UUID, summary: dict[str, Any]) -> bool:
    """Mark a group done unless it is terminal already; True when this caller claimed it."""
    result = await session.execute(update(TrajectoryGroupRow)
                                   .where(TrajectoryGroupRow.id == group_id,
                                          TrajectoryGroupRow.status.not_in(TERMINAL_GROUP))
                                   .values(status="done", summary=summary))
    return bool(result.rowcount)  # type: ignore[attr-defined]


def trajectory_rows(job_id: uuid.UUID, group_id: uuid.UUID, task_id: str, trajs: Sequence[Trajectory],
                    *, attempt: int, totals: Sequence[float | None] | None = None) -> list[dict[str, Any]]:
    """Table rows of a group's kept trajectories; ``totals`` (one per member) are the reward service's
    totals of the job's spec, kept on each row as its ``reward``."""
    rows = [_row(job_id, group_id, task_id, t, attempt) for t in trajs]
    for row, total in zip(rows, totals or [], strict=False):
        row["reward"] = total
    return rows


def _row(job_id: uuid.UUID, group_id: uuid.UUID, task_id: str, t: Trajectory, attempt: int) -> dict[str, Any]:
    tokens = t.tokens
    data = t.to_row()
    return {"id": trajectory_id(group_id, t.sample_index, attempt), "job_id": job_id, "group_id": group_id,
            "task_id": task_id, "sample_index": t.sample_index, "attempt": attempt,
            "status": "failed" if t.metadata.get("error_code") else "finished", "stop_reason": t.stop_reason,
            "truncated": t.truncated, "turns": t.turns, "messages": data["messages"], "tools": data["tools"],
            "prompt_ids": tokens.prompt_ids if tokens else None,
            "response_ids": tokens.response_ids if tokens else None,
            "loss_mask": tokens.loss_mask if tokens else None, "logprobs": tokens.logprobs if tokens else None,
            "teacher_logprobs": (tokens.teacher_logprobs or None) if tokens else None,
            "weight_version": tokens.weight_version if tokens else None,
            "steps": data.get("steps", []), "meta": t.metadata}


async def write_trajectories(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> int:
    """Insert rows once per (group_id, sample_index, attempt); returns rows newly written."""
    inserted = await insert_ignore(session, TrajectoryRow, list(rows),
                                   conflict_columns=["group_id", "sample_index", "attempt"])
    await session.flush()
    return inserted


async def page_trajectories(session: AsyncSession, job_id: uuid.UUID, *, offset: int, limit: int
                            ) -> list[tuple[TrajectoryRow, float | None]]:
    """A page of the job's trajectories (task, then member order) with their newest reward total."""
    stmt = (select(TrajectoryRow).where(TrajectoryRow.job_id == job_id)
            .order_by(TrajectoryRow.task_id, TrajectoryRow.sample_index, TrajectoryRow.attempt)
            .offset(offset).limit(limit))
    return [(row, row.reward) for row in (await session.scalars(stmt)).all()]


async def keep_rewards(session: AsyncSession, job_id: uuid.UUID, totals: dict[uuid.UUID, float | None]) -> int:
    """Keep the reward service's newest totals on the job's trajectories; returns how many it names are the job's.

    Ids of other jobs' trajectories (or of none) are left alone: a caller keeps only its own job's copy.
    A stored-unscored trajectory (``reward_status: pending``) that gets a total is scored from now on,
    and the job's ``unscored`` count goes down by as many.
    """
    if not totals:
        return 0
    rows = list((await session.execute(select(TrajectoryRow.id, TrajectoryRow.meta).where(
        TrajectoryRow.job_id == job_id, TrajectoryRow.id.in_(list(totals))))).all())
    if not rows:
        return 0
    filled = 0
    values: list[dict[str, Any]] = []
    for tid, meta in rows:
        value: dict[str, Any] = {"id": tid, "reward": totals[tid]}
        if (meta or {}).get("reward_status") == "pending" and totals[tid] is not None:
            value["meta"] = {k: v for k, v in meta.items() if k != "reward_error"} | {"reward_status": "scored"}
            filled += 1
        values.append(value)
    # One executemany per set of columns: rows that change status carry their meta too.
    for group in ([v for v in values if "meta" in v], [v for v in values if "meta" not in v]):
        if group:
            await session.execute(update(TrajectoryRow), group)
    if filled:
        job = await lock_job(session, job_id)
        counts = dict(job.counts or {})
        counts["unscored"] = max(0, int(counts.get("unscored", 0)) - filled)
        job.counts = counts
    await session.flush()
    return len(rows)


async def mark_reward_pending(session: AsyncSession, ids: Sequence[uuid.UUID], error: str) -> int:
    """Mark stored trajectories whose scores the reward service has not kept yet; returns how many changed."""
    rows = list((await session.scalars(select(TrajectoryRow).where(TrajectoryRow.id.in_(list(ids))))).all())
    changed = 0
    for row in rows:
        if (row.meta or {}).get("reward_status") != "pending":
            row.meta = {**(row.meta or {}), "reward_status": "pending", "reward_error": error}
            changed += 1
    await session.flush()
    return changed
