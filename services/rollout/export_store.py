"""Read a rollout job's stored trajectories in pages and export them to a file.

Only the newest attempt of each (task, member) is exported, and members cut by
over-sampling (``meta["cut"]``) are left out: a trainer wants exactly the
group it would have been given live. The reward is the total the reward
service keeps for the job's own reward spec (asked through its client, a page
at a time); without one, ``meta["reward"]`` (an env's episode reward), else the
newest total of any spec. The advantage is ``meta["advantage"]``.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from services.rollout.export import DistillWeights, ExportFormat, ExportItem, ParquetSink, jsonl_row
from shared.clients import RewardClient
from shared.db.models import RolloutJobRow, TrajectoryRow
from shared.errors import NotFound
from shared.jsonl import dumps_line
from shared.schema import TeacherSpec, Trajectory
from shared.schema.reward_spec import TOTAL_COMPONENT, RewardSpec, spec_hash

__all__ = ["distill_weights", "export_job", "iter_job_items", "job_spec_hash", "trajectory_of"]

def _tokens(row: TrajectoryRow) -> dict[str, Any] | None:
    if row.response_ids is None:
        return None
    return {"prompt_ids": row.prompt_ids or [], "response_ids": row.response_ids, "loss_mask": row.loss_mask or [],
            "logprobs": row.logprobs or [], "weight_version": row.weight_version,
            "teacher_logprobs": row.teacher_logprobs or []}


def trajectory_of(row: TrajectoryRow) -> Trajectory:
    """The schema view of a stored trajectory, token data included.

    Token arrays that do not line up are dropped (and the reason kept in
    metadata) rather than losing the whole trajectory.
    """
    data: dict[str, Any] = {"id": str(row.id), "group_id": str(row.group_id) if row.group_id else None,
            "sample_index": row.sample_index, "messages": row.messages or [], "tools": row.tools or [],
            "turns": row.turns, "stop_reason": row.stop_reason, "truncated": row.truncated,
            "tokens": _tokens(row), "steps": row.steps or [], "metadata": row.meta or {}}
    try:
        return Trajectory.model_validate(data)
    except ValidationError as exc:
        if data["tokens"] is None:
            raise
        meta = {**(row.meta or {}), "export_error": f"token data dropped: {exc.errors()[0]['msg']}"}
        return Trajectory.model_validate({**data, "tokens": None, "metadata": meta})


def distill_weights(job: RolloutJobRow) -> DistillWeights | None:
    """The advantage weights of a job with a teacher (None without one, or when its spec is unreadable)."""
    raw = (job.spec or {}).get("teacher")
    if raw is None:
        return None
    try:
        teacher = TeacherSpec.model_validate(raw)
    except ValidationError:
        return None
    return DistillWeights(reward_weight=teacher.reward_weight, distill_weight=teacher.distill_weight)


def job_spec_hash(job: RolloutJobRow) -> str | None:
    """Hash of the reward spec the job was submitted with (None when it has none or it is unreadable)."""
    raw = (job.spec or {}).get("reward")
    if raw is None:
        return None
    try:
        return spec_hash(RewardSpec.model_validate(raw))
    except ValidationError:
        return None


async def _totals(rewards: RewardClient, ids: list[uuid.UUID],
                  digest: str | None) -> dict[uuid.UUID, tuple[float | None, bool]]:
    """Each trajectory's kept total (the reward service's): the job spec's (exact=True), else the newest of any spec."""
    out: dict[uuid.UUID, tuple[float | None, bool]] = {}
    if not ids:
        return out
    for r in await rewards.stored([str(i) for i in ids], components=[TOTAL_COMPONENT]):
        traj_id = uuid.UUID(r.trajectory_id)
        if r.spec_hash == digest or not out.get(traj_id, (None, False))[1]:
            out[traj_id] = (r.score, r.spec_hash == digest)
    return out


def _page_query(job_id: uuid.UUID, offset: int, limit: int) -> Any:
    return (select(TrajectoryRow).where(TrajectoryRow.job_id == job_id)
            .order_by(TrajectoryRow.task_id, TrajectoryRow.sample_index, TrajectoryRow.attempt.desc(),
                      TrajectoryRow.id)
            .offset(offset).limit(limit))


def _number(meta: dict[str, Any], key: str) -> float | None:
    value = meta.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _reward(row: TrajectoryRow, totals: dict[uuid.UUID, tuple[float | None, bool]]) -> float | None:
    # The job's own spec total is what its advantage was computed from; an env-only job has just meta.
    total, exact = totals.get(row.id, (None, False))
    if exact:
        return total
    from_meta = _number(row.meta or {}, "reward")
    return from_meta if from_meta is not None else total


async def iter_job_items(session: AsyncSession, rewards: RewardClient, job_id: uuid.UUID, *,
                         page_size: int = 256) -> AsyncIterator[list[ExportItem]]:
    """Yield the job's exportable trajectories one page at a time (newest attempt, cut members skipped)."""
    job = await session.get(RolloutJobRow, job_id)
    if job is None:
        raise NotFound(f"no rollout job with id {job_id}")
    digest, offset, last_key = job_spec_hash(job), 0, None
    distill = distill_weights(job)
    while rows := list((await session.scalars(_page_query(job_id, offset, page_size))).all()):
        offset += len(rows)
        keep = []
        for row in rows:
            key = (row.task_id, row.sample_index)
            if key != last_key and not (row.meta or {}).get("cut"):
                keep.append(row)
            last_key = key  # rows come newest attempt first, so older attempts follow and are skipped
        totals = await _totals(rewards, [r.id for r in keep], digest)
        yield [ExportItem(trajectory_of(r), task_id=r.task_id, reward=_reward(r, totals),
                          advantage=_number(r.meta or {}, "advantage"), distill=distill) for r in keep]
        session.expunge_all()  # keep memory flat on large jobs


async def export_job(session: AsyncSession, rewards: RewardClient, job_id: uuid.UUID, *, fmt: ExportFormat,
                     directory: Path | None = None, page_size: int = 256) -> Path:
    """Write the job's export to a new temporary file and return its path (the caller removes it)."""
    fd, name = tempfile.mkstemp(prefix=f"rollout-{job_id}-", suffix=f".{fmt}", dir=directory)
    path = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            if fmt == "parquet":
                await _write_parquet(session, rewards, job_id, out, page_size)
            else:
                async for page in iter_job_items(session, rewards, job_id, page_size=page_size):
                    out.writelines(dumps_line(jsonl_row(item)) for item in page)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


async def _write_parquet(session: AsyncSession, rewards: RewardClient, job_id: uuid.UUID, out: Any,
                         page_size: int) -> None:
    sink: ParquetSink | None = None
    try:
        async for page in iter_job_items(session, rewards, job_id, page_size=page_size):
            sink = sink or ParquetSink(out)
            sink.write(page)
        sink = sink or ParquetSink(out)
    finally:
        if sink is not None:
            sink.close()
