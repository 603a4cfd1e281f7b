"""Reward storage: specs by hash, provenance rows per score (each naming its rollout job).

Only the reward service's own tables are read here: the trajectories to re-score come from the
rollout service's API. Every function takes the caller's session and only flushes; the caller commits.
Scores are written with ``insert_ignore`` on (trajectory, component, spec_hash),
so writing the same batch twice records each score once, and old scores of
other specs are never touched.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from services.reward.service import ScoredTrajectory
from shared.db.models import RewardRow, RewardSpecRow
from shared.db.upsert import insert_ignore
from shared.errors import NotFound
from shared.schema.reward_spec import TOTAL_COMPONENT, RewardSpec, spec_hash

__all__ = [
    "TOTAL_COMPONENT",
    "RescoreCounts",
    "get_spec",
    "component_means",
    "newest_totals",
    "read_scores",
    "read_scores_of",
    "record_scores",
    "rescore_counts",
    "save_spec",
]

async def save_spec(session: AsyncSession, spec: RewardSpec) -> str:
    """Store a spec under its hash (once) and return the hash."""
    digest = spec_hash(spec)
    await insert_ignore(session, RewardSpecRow, [{"spec_hash": digest, "spec": spec.model_dump(mode="json")}],
                        conflict_columns=["spec_hash"])
    return digest


async def get_spec(session: AsyncSession, digest: str) -> RewardSpec:
    """The spec stored under ``digest``; 404 when none was stored."""
    row = await session.get(RewardSpecRow, digest)
    if row is None:
        raise NotFound(f"no reward spec with hash {digest!r} was ever used")
    return RewardSpec.model_validate(row.spec)


def _total_row(traj_id: uuid.UUID, digest: str, scored: ScoredTrajectory, job_id: uuid.UUID | None
               ) -> dict[str, Any]:
    return {"trajectory_id": traj_id, "job_id": job_id, "component": TOTAL_COMPONENT, "version": "1", "params": {},
            "spec_hash": digest, "weight": 1.0, "score": scored.score,
            "metrics": {**scored.metrics, "mask": float(scored.mask)}, "status": scored.status,
            "error": scored.error}


def _rows_for(traj_id: uuid.UUID, digest: str, scored: ScoredTrajectory, job_id: uuid.UUID | None
              ) -> list[dict[str, Any]]:
    rows = [{"trajectory_id": traj_id, "job_id": job_id, "component": r.component, "version": r.version,
             "params": r.params, "spec_hash": digest, "weight": r.weight, "score": r.score, "metrics": r.metrics,
             "status": r.status, "error": r.error} for r in scored.records]
    return [*rows, _total_row(traj_id, digest, scored, job_id)]


async def record_scores(session: AsyncSession, digest: str, results: Sequence[tuple[uuid.UUID, ScoredTrajectory]],
                        *, job_id: uuid.UUID | None = None) -> int:
    """Write each component's record and the total per trajectory (of ``job_id``); returns rows newly inserted."""
    rows = [row for traj_id, scored in results for row in _rows_for(traj_id, digest, scored, job_id)]
    inserted = await insert_ignore(session, RewardRow, rows,
                                   conflict_columns=["trajectory_id", "component", "spec_hash"])
    await session.flush()
    return inserted


async def read_scores(session: AsyncSession, trajectory_id: uuid.UUID, *, digest: str | None = None) -> list[RewardRow]:
    """A trajectory's stored score rows (all specs, or one), oldest first."""
    stmt = select(RewardRow).where(RewardRow.trajectory_id == trajectory_id)
    if digest is not None:
        stmt = stmt.where(RewardRow.spec_hash == digest)
    return list((await session.scalars(stmt.order_by(RewardRow.created_at, RewardRow.component))).all())


async def read_scores_of(session: AsyncSession, trajectory_ids: Sequence[uuid.UUID], *,
                         components: Sequence[str] | None = None) -> list[RewardRow]:
    """The stored score rows of several trajectories (all specs; only ``components`` when given), oldest first."""
    if not trajectory_ids:
        return []
    stmt = select(RewardRow).where(RewardRow.trajectory_id.in_(list(trajectory_ids)))
    if components is not None:
        stmt = stmt.where(RewardRow.component.in_(list(components)))
    return list((await session.scalars(stmt.order_by(RewardRow.created_at, RewardRow.component))).all())


async def newest_totals(session: AsyncSession, trajectory_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, float | None]:
    """Each trajectory's newest stored total (of any spec): the score the rollout service keeps a copy of."""
    rows = await read_scores_of(session, trajectory_ids, components=[TOTAL_COMPONENT])
    return {row.trajectory_id: row.score for row in rows}  # oldest first: the newest wins


async def component_means(session: AsyncSession, job_id: uuid.UUID) -> dict[str, float]:
    """Mean score of each component (totals aside) over every score kept for the job's trajectories."""
    stmt = (select(RewardRow.component, func.avg(RewardRow.score))
            .where(RewardRow.job_id == job_id, RewardRow.component != TOTAL_COMPONENT, RewardRow.score.is_not(None))
            .group_by(RewardRow.component).order_by(RewardRow.component))
    return {name: float(mean) for name, mean in (await session.execute(stmt)).tuples() if mean is not None}


@dataclass(slots=True)
class RescoreCounts:
    """Progress of one spec over one job: trajectories by outcome."""

    total: int
    scored: int
    failed: int
    skipped: int

    @property
    def pending(self) -> int:
        """Trajectories without a total row yet."""
        return max(self.total - self.scored - self.failed - self.skipped, 0)


async def rescore_counts(session: AsyncSession, job_id: uuid.UUID, digest: str, *, total: int) -> RescoreCounts:
    """Count the job's ``total`` trajectories by the status of their total row for this spec."""
    stmt = (select(RewardRow.status, func.count())
            .where(RewardRow.job_id == job_id, RewardRow.spec_hash == digest, RewardRow.component == TOTAL_COMPONENT)
            .group_by(RewardRow.status))
    by_status = {status: int(n) for status, n in (await session.execute(stmt)).all()}
    return RescoreCounts(total=total, scored=by_status.get("ok", 0),
                         failed=by_status.get("failed", 0), skipped=by_status.get("skipped", 0))

