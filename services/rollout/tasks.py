"""Queue tasks of the rollout service (run by Celery workers or in-process)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from services.rollout import opd, service
from shared.db.session import database_unavailable
from shared.errors import ServiceUnavailable, UpstreamUnavailable
from shared.queue import TaskContext, queue_task

__all__ = ["MAX_SHARD_ATTEMPTS", "run_opd", "run_shard"]

#: Runs of one shard before a transient failure is recorded instead of retried.
MAX_SHARD_ATTEMPTS = 4
_TRANSIENT = (UpstreamUnavailable, ServiceUnavailable, OperationalError, InterfaceError, ConnectionError)


@queue_task(service.RUN_SHARD_TASK, transient=_TRANSIENT, max_retries=MAX_SHARD_ATTEMPTS)
async def run_shard(ctx: TaskContext, *, job_id: str, shard_index: int) -> dict[str, Any]:
    """Run one shard's open groups; a redelivered or retried shard skips groups already stored."""
    try:
        try:
            return await service.run_shard(ctx.sessionmaker, ctx.settings, uuid.UUID(job_id), shard_index)
        except DBAPIError as exc:
            # A Postgres still starting up after a restart ("not yet accepting connections") is no
            # OperationalError, yet the shard can run once it is up: retry it like the others.
            if database_unavailable(exc):
                raise ServiceUnavailable(f"the database is not available: {exc.orig}") from exc
            raise
    except _TRANSIENT as exc:
        # In-process there is no retry, and a broker's retries run out: record it, never leave the job open.
        if ctx.settings.is_embedded or ctx.attempt >= MAX_SHARD_ATTEMPTS:
            await _fail(ctx, job_id, shard_index, exc)
            return {"failed": str(exc)}
        raise
    except Exception as exc:
        await _fail(ctx, job_id, shard_index, exc)  # a shard that cannot run fails its groups, not silently
        raise


async def _fail(ctx: TaskContext, job_id: str, shard_index: int, exc: BaseException) -> None:
    await service.fail_shard(ctx.sessionmaker, uuid.UUID(job_id), shard_index, f"{type(exc).__name__}: {exc}")


@queue_task(opd.RUN_OPD_TASK, transient=_TRANSIENT, max_retries=MAX_SHARD_ATTEMPTS)
async def run_opd(ctx: TaskContext, *, job_id: str) -> dict[str, Any]:
    """Run an OPD job's rounds; a redelivered run continues where the stored rounds stop."""
    return await opd.run_opd(ctx.sessionmaker, ctx.settings, uuid.UUID(job_id))
