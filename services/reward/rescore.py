"""Re-scoring a rollout job's stored trajectories with a new reward spec.

A request stores the spec by hash and queues one task per batch of
trajectories; each batch writes its scores keyed by (trajectory, component,
spec_hash), so a redelivered batch records each score once and the scores of
earlier specs stay untouched. Every trajectory gets an outcome: a bad stored
row, a missing or non-JSON ground truth or a raising component is a recorded
failure of that trajectory, never of the batch.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from typing import Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from services.reward import repository
from services.reward.errors import RewardSpecError
from services.reward.ground_truth import ground_truth_object
from services.reward.schemas import (
    GroundTruthSource,
    RescoreProgress,
    RescoreRequest,
    RescoreStarted,
)
from services.reward.service import ScoredTrajectory, is_rollout_error, score_trajectory
from services.reward.spec import RewardSpec
from shared.db.models import TrajectoryRow
from shared.queue import Dispatcher, enqueue_after_commit
from shared.schema import Trajectory

__all__ = ["RESCORE_TASK", "read_progress", "rescore_batch", "resolve_ground_truth", "score_stored", "start_rescore"]

RESCORE_TASK = "reward.rescore_job"


def _status_url(job_id: uuid.UUID, digest: str) -> str:
    return f"/v1/rollouts/{job_id}/rescore/{digest}"


async def start_rescore(session: AsyncSession, dispatcher: Dispatcher, job_id: uuid.UUID, body: RescoreRequest,
                        *, batch_size: int) -> RescoreStarted:
    """Store the spec and queue one task per batch of the job's trajectories (sent after commit)."""
    body.spec.validate_names()
    if body.spec.functions:
        raise RewardSpecError("re-scoring a stored job with reward function components is not supported; "
                              "score the trajectories with POST /v1/rewards/score", param="spec.functions")
    await repository.get_rollout_job(session, job_id)
    digest = await repository.save_spec(session, body.spec)
    total = await repository.count_job_trajectories(session, job_id)
    batches = math.ceil(total / batch_size)
    for batch in range(batches):
        enqueue_after_commit(session, dispatcher, RESCORE_TASK, job_id=str(job_id), spec_hash=digest, batch=batch,
                             batch_size=batch_size, ground_truth_source=body.ground_truth_source)
    await session.flush()
    return RescoreStarted(job_id=str(job_id), spec_hash=digest, total=total, batches=batches,
                          status_url=_status_url(job_id, digest))


async def read_progress(session: AsyncSession, job_id: uuid.UUID, digest: str) -> RescoreProgress:
    """Counts of scored, failed, skipped and pending trajectories of the job under one spec."""
    await repository.get_rollout_job(session, job_id)
    await repository.get_spec(session, digest)
    counts = await repository.rescore_counts(session, job_id, digest)
    return RescoreProgress(job_id=str(job_id), spec_hash=digest, total=counts.total, scored=counts.scored,
                           failed=counts.failed, skipped=counts.skipped, pending=counts.pending,
                           done=counts.pending == 0)


def resolve_ground_truth(traj: Trajectory, source: GroundTruthSource) -> tuple[dict[str, Any] | None, str | None]:
    """(ground truth, None) from the trajectory's metadata, or (None, the reason there is none)."""
    meta = traj.metadata
    extra = meta.get("rollout_extra")
    solution = extra.get("solution") if isinstance(extra, dict) else None
    if source in ("auto", "meta") and meta.get("ground_truth") is not None:
        return ground_truth_object(meta["ground_truth"], "meta.ground_truth")
    if source in ("auto", "solution") and solution is not None:
        return ground_truth_object(solution, "meta.rollout_extra.solution")
    return None, f"no ground truth (looked in {source})"


def _failed(traj_id: str, reason: str) -> ScoredTrajectory:
    return ScoredTrajectory(trajectory_id=traj_id, score=None, status="failed", error=reason)


def _invalid_row(traj_id: str, exc: ValidationError) -> ScoredTrajectory:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    return _failed(traj_id, f"stored trajectory is not valid: {where}: {first.get('msg')}")


def score_stored(row: TrajectoryRow, spec: RewardSpec, source: GroundTruthSource) -> ScoredTrajectory:
    """Score one stored trajectory; never raises (every problem is this trajectory's failure)."""
    traj_id = str(row.id)
    try:
        traj = repository.trajectory_from_row(row)
    except ValidationError as exc:
        return _invalid_row(traj_id, exc)
    if is_rollout_error(traj):
        return score_trajectory(traj, spec)
    truth, reason = resolve_ground_truth(traj, source)
    if truth is None:
        return _failed(traj_id, reason or "no ground truth")
    try:
        return score_trajectory(traj, spec, truth)
    except Exception as exc:  # noqa: BLE001 - one trajectory's scorer failure must not fail its batch
        return _failed(traj_id, f"scoring raised {type(exc).__name__}: {exc}")


def _score_all(rows: list[TrajectoryRow], spec: RewardSpec, source: GroundTruthSource) -> list[ScoredTrajectory]:
    return [score_stored(row, spec, source) for row in rows]


async def rescore_batch(session: AsyncSession, *, job_id: uuid.UUID, digest: str, batch: int, batch_size: int,
                        source: GroundTruthSource) -> dict[str, int]:
    """Score one batch of the job's trajectories with the stored spec and record the scores (flush only)."""
    spec = await repository.get_spec(session, digest)
    rows = await repository.job_trajectories(session, job_id, offset=batch * batch_size, limit=batch_size)
    # Scoring is CPU work: keep it off the event loop that may also serve requests (embedded default).
    results = await asyncio.to_thread(_score_all, rows, spec, source)
    inserted = await repository.record_scores(session, digest, [(row.id, r) for row, r in zip(rows, results)])
    outcome = {"trajectories": len(rows), "rows_inserted": inserted}
    for status in ("ok", "failed", "skipped"):
        outcome[status] = sum(r.status == status for r in results)
    return outcome
