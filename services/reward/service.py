"""Score trajectories with a reward spec: per-trajectory score, metrics and provenance (pure, no DB)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.reward.extract import ROLLOUT_ERROR_PREFIX
from services.reward.spec import RewardSpec, check_spec, run_spec
from shared.schema import RewardRecord, ScoredTrajectory, Trajectory, content_text

__all__ = ["ScoredTrajectory", "ground_truth_of", "is_rollout_error", "score_trajectories", "score_trajectory"]


def ground_truth_of(traj: Trajectory, given: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Ground truth given explicitly, else from ``metadata.ground_truth`` or ``rollout_extra.solution``."""
    if given is not None:
        return given
    meta = traj.metadata
    found = meta.get("ground_truth") or (meta.get("rollout_extra") or {}).get("solution")
    return found if isinstance(found, dict) else None


def is_rollout_error(traj: Trajectory) -> bool:
    """True when the rollout itself failed (``ROLLOUT_ERROR:`` in an assistant message)."""
    return any(m.role == "assistant" and content_text(m.content).lstrip().startswith(ROLLOUT_ERROR_PREFIX)
               for m in traj.messages)


def _flat_metrics(records: list[RewardRecord]) -> dict[str, float]:
    out: dict[str, float] = {}
    for rec in records:
        if rec.score is not None:
            out[rec.component] = float(rec.score)
        for key, value in rec.metrics.items():
            if isinstance(value, (int, float)):
                out[f"{rec.component}/{key}"] = float(value)
    return out


def score_trajectory(
    traj: Trajectory, spec: RewardSpec, ground_truth: dict[str, Any] | None = None
) -> ScoredTrajectory:
    """Score one trajectory; a rollout error is skipped and marked for masking."""
    if is_rollout_error(traj):
        return ScoredTrajectory(trajectory_id=traj.id, score=None, status="skipped", mask=True,
                                metrics={"rollout_error": 1.0}, error="rollout_error")
    if not traj.messages:
        return ScoredTrajectory(trajectory_id=traj.id, score=None, status="failed",
                                error="empty trajectory: no messages")
    truth = ground_truth_of(traj, ground_truth)
    if truth is None:
        return ScoredTrajectory(trajectory_id=traj.id, score=None, status="failed", error="no ground truth")
    total, records = run_spec(spec, traj, truth)
    failed = [r for r in records if r.status == "failed" and r.weight != 0]
    return ScoredTrajectory(trajectory_id=traj.id, score=total, metrics=_flat_metrics(records), records=records,
                            status="failed" if failed else "ok", error=failed[0].error if failed else None)


def score_trajectories(trajs: Sequence[Trajectory], spec: RewardSpec, *,
                       ground_truths: Sequence[dict[str, Any] | None] | None = None) -> list[ScoredTrajectory]:
    """Score a batch; each trajectory's failure is recorded on its own result."""
    check_spec(spec)
    truths = list(ground_truths) if ground_truths is not None else [None] * len(trajs)
    return [score_trajectory(t, spec, g) for t, g in zip(trajs, truths, strict=True)]
