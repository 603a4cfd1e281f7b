"""Keeping scores this service computed for trajectories another service has since stored.

A rollout shard scores a finished group (``POST /v1/rewards/score``, pure), stores the group, then
hands the results back here (``POST /v1/rewards/record``): the reward service alone writes its
tables. Rows are keyed by (trajectory, component, spec hash), so a repeated record is a no-op.
"""

from __future__ import annotations

import uuid

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from services.reward import repository
from services.reward.schemas import RecordRequest, RecordResponse
from services.reward.spec import check_spec
from shared.errors import ValidationFailed

__all__ = ["record_results"]


def _trajectory_id(raw: str) -> uuid.UUID:
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise ValidationFailed(f"trajectory_id {raw!r} is not a UUID: record names stored trajectories",
                               param="results.trajectory_id") from None


async def record_results(session: AsyncSession, body: RecordRequest) -> RecordResponse:
    """Store the spec by hash and every result's provenance rows (flush only; 422 for unknown trajectories)."""
    check_spec(body.spec)
    pairs = [(_trajectory_id(r.trajectory_id), r) for r in body.results]
    digest = await repository.save_spec(session, body.spec)
    try:
        async with session.begin_nested():
            inserted = await repository.record_scores(session, digest, pairs, job_id=body.job_id)
    except IntegrityError:
        raise ValidationFailed("a result names a trajectory that is not stored; record after the trajectories "
                               "are committed", param="results.trajectory_id") from None
    return RecordResponse(spec_hash=digest, inserted=inserted)
