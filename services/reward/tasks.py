"""Queue tasks of the reward service (run by Celery workers or in-process)."""

from __future__ import annotations

import uuid
from typing import Any

from services.reward.deps import task_rollout_client
from services.reward.rescore import RESCORE_TASK, rescore_batch
from shared.queue import TaskContext, queue_task

__all__ = ["rescore_job"]


@queue_task(RESCORE_TASK)
async def rescore_job(ctx: TaskContext, *, job_id: str, spec_hash: str, batch: int, batch_size: int,
                      ground_truth_source: str = "auto") -> dict[str, Any]:
    """Re-score one batch of a rollout job's trajectories; idempotent per (job, batch, spec)."""
    async with task_rollout_client(ctx.settings, ctx.sessionmaker) as rollout, ctx.sessionmaker() as session:
        outcome = await rescore_batch(session, rollout, job_id=uuid.UUID(job_id), digest=spec_hash, batch=batch,
                                      batch_size=batch_size, source=ground_truth_source)  # type: ignore[arg-type]
        await session.commit()
    return outcome
