"""Queue tasks of the rollout service (run by Celery workers or in-process)."""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from typing import Any

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from services.rollout import opd, service
from shared.db.session import database_unavailable
from shared.errors import ServiceUnavailable, UpstreamUnavailable
from shared.queue import TaskContext, queue_task

__all__ = ["MAX_SHARD_ATTEMPTS", "run_opd", "run_shard"]

log = logging.getLogger("trajforge.rollout")

#: Runs of one shard before a transient failure is recorded instead of retried.
MAX_SHARD_ATTEMPTS = 4
_TRANSIENT = (UpstreamUnavailable, ServiceUnavailable, OperationalError, InterfaceError, ConnectionError)
#: Tries at recording a failed shard while the database is away (backoff 1, 2, 4, ... times the factor).
FAIL_RECORD_ATTEMPTS = 7


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
        # Retries (a broker's, or the in-process runner's, the same count) ran out: record it, never
        # leave the job open.
        if ctx.attempt >= MAX_SHARD_ATTEMPTS:
            await _fail(ctx, job_id, shard_index, exc)
            return {"failed": str(exc)}
        raise
    except Exception as exc:
        await _fail(ctx, job_id, shard_index, exc)  # a shard that cannot run fails its groups, not silently
        raise


async def _fail(ctx: TaskContext, job_id: str, shard_index: int, exc: BaseException) -> None:
    """Record the shard's failure; when the cause is the database being away, wait for it to return.

    This write is what keeps a job from staying ``running`` with open groups, so it outlasts a
    restart of Postgres (about a minute with the default backoff) before it gives up.
    """
    error = f"{type(exc).__name__}: {exc}"
    for attempt in range(FAIL_RECORD_ATTEMPTS):
        try:
            await service.fail_shard(ctx.sessionmaker, uuid.UUID(job_id), shard_index, error)
            return
        except (DBAPIError, InterfaceError, ConnectionError, OSError) as db_exc:
            unavailable = not isinstance(db_exc, DBAPIError) or isinstance(db_exc, OperationalError) \
                or database_unavailable(db_exc)
            if not unavailable or attempt == FAIL_RECORD_ATTEMPTS - 1:
                log.error("could not record the failure of shard %s of job %s: %s (the shard failed with %s)",
                          shard_index, job_id, db_exc, error)
                raise
            await asyncio.sleep(random.uniform(0.5, 1.0) * ctx.settings.queue_retry_backoff_s * 2 ** attempt)


@queue_task(opd.RUN_OPD_TASK, transient=_TRANSIENT, max_retries=MAX_SHARD_ATTEMPTS)
async def run_opd(ctx: TaskContext, *, job_id: str) -> dict[str, Any]:
    """Run an OPD job's rounds; a redelivered run continues where the stored rounds stop."""
    return await opd.run_opd(ctx.sessionmaker, ctx.settings, uuid.UUID(job_id))
