"""Re-scoring a rollout job's stored trajectories with a new reward spec.

A request stores the spec by hash and queues one task per batch of
trajectories; each batch writes its scores keyed by (trajectory, component,
spec_hash), so a redelivered batch records each score once and the scores of
earlier specs stay untouched. Every trajectory gets an outcome: a bad stored
row, a missing or non-JSON ground truth or a raising component is a recorded
failure of that trajectory, never of the batch.

The job and its trajectories are the rollout service's: they are read through its API
(``RolloutClient``: how many it stored, one page per batch in its stable order), never from
its tables, and each batch's newest totals go back to it the same way (it keeps a copy to list,
sort and filter by); the reward rows name the job, so progress reads only this service's own table.
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
from services.reward.spec import RewardSpec, check_spec
from shared.clients import RolloutClient
from shared.queue import Dispatcher, enqueue_after_commit
from shared.schema import Trajectory

__all__ = ["RESCORE_TASK", "read_progress", "rescore_batch", "resolve_ground_truth", "score_stored", "start_rescore"]

RESCORE_TASK = "reward.rescore_job"
_PAGE = 1000  # the rollout API's largest page
_TRAJECTORY_FIELDS = ("id", "group_id", "sample_index", "messages", "tools", "turns", "stop_reason", "truncated",
                      "steps", "metadata")


async def _job_total(rollout: RolloutClient, job_id: uuid.UUID) -> int:
    """How many trajectories the job stored (the rollout service's 404 when there is no such job)."""
    page = await rollout.trajectories(str(job_id), offset=0, limit=1)
    return int(page.get("total") or 0)


async def _job_batch(rollout: RolloutClient, job_id: uuid.UUID, *, offset: int, limit: int) -> list[dict[str, Any]]:
    """Trajectories ``offset`` .. ``offset + limit`` of the job, in the rollout API's order, a page at a time."""
    items: list[dict[str, Any]] = []
    while len(items) < limit:
        page = await rollout.trajectories(str(job_id), offset=offset + len(items), limit=min(_PAGE, limit - len(items)))
        items += page.get("items") or []
        if page.get("next_offset") is None:
            break
    return items


def _status_url(job_id: uuid.UUID, digest: str) -> str:
    return f"/v1/rollouts/{job_id}/rescore/{digest}"


async def start_rescore(session: AsyncSession, dispatcher: Dispatcher, job_id: uuid.UUID, body: RescoreRequest,
                        *, batch_size: int, rollout: RolloutClient) -> RescoreStarted:
    """Store the spec and queue one task per batch of the job's trajectories (sent after commit)."""
    check_spec(body.spec)
    if body.spec.functions:
        raise RewardSpecError("re-scoring a stored job with reward function components is not supported; "
                              "score the trajectories with POST /v1/rewards/score", param="spec.functions")
    total = await _job_total(rollout, job_id)
    digest = await repository.save_spec(session, body.spec)
    batches = math.ceil(total / batch_size)
    for batch in range(batches):
        enqueue_after_commit(session, dispatcher, RESCORE_TASK, job_id=str(job_id), spec_hash=digest, batch=batch,
                             batch_size=batch_size, ground_truth_source=body.ground_truth_source)
    await session.flush()
    return RescoreStarted(job_id=str(job_id), spec_hash=digest, total=total, batches=batches,
                          status_url=_status_url(job_id, digest))


async def read_progress(session: AsyncSession, job_id: uuid.UUID, digest: str, *,
                        rollout: RolloutClient) -> RescoreProgress:
    """Counts of scored, failed, skipped and pending trajectories of the job under one spec."""
    total = await _job_total(rollout, job_id)
    await repository.get_spec(session, digest)
    counts = await repository.rescore_counts(session, job_id, digest, total=total)
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


def score_stored(item: dict[str, Any], spec: RewardSpec, source: GroundTruthSource) -> ScoredTrajectory:
    """Score one stored trajectory (an item of the rollout API's page); never raises (every problem is its failure)."""
    traj_id = str(item.get("id"))
    try:
        traj = Trajectory.model_validate({k: item[k] for k in _TRAJECTORY_FIELDS if k in item})
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


def _score_all(items: list[dict[str, Any]], spec: RewardSpec, source: GroundTruthSource) -> list[ScoredTrajectory]:
    return [score_stored(item, spec, source) for item in items]


async def rescore_batch(session: AsyncSession, rollout: RolloutClient, *, job_id: uuid.UUID, digest: str, batch: int,
                        batch_size: int, source: GroundTruthSource) -> dict[str, int]:
    """Score one batch of the job's trajectories with the stored spec and record the scores (flush only)."""
    spec = await repository.get_spec(session, digest)
    rows = await _job_batch(rollout, job_id, offset=batch * batch_size, limit=batch_size)
    # Scoring is CPU work: keep it off the event loop that may also serve requests (embedded default).
    results = await asyncio.to_thread(_score_all, rows, spec, source)
    pairs = [(uuid.UUID(str(row["id"])), r) for row, r in zip(rows, results, strict=True)]
    inserted = await repository.record_scores(session, digest, pairs, job_id=job_id)
    if pairs:
        # The rollout service keeps each trajectory's newest total (its listings sort and filter on it):
        # it is told through its API; a refusal raises, so the batch runs again and tells it then.
        newest = await repository.newest_totals(session, [tid for tid, _ in pairs])
        await rollout.keep_rewards(str(job_id), {str(tid): score for tid, score in newest.items()})
    outcome = {"trajectories": len(rows), "rows_inserted": inserted}
    for status in ("ok", "failed", "skipped"):
        outcome[status] = sum(r.status == status for r in results)
    return outcome
