"""Queue tasks of the cleaning service: one per batch of a job, then the global dedup phase."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
import weakref
from typing import Any

from services.cleaning import jobs
from shared.db.session import session_scope
from shared.queue import Dispatcher, TaskContext, make_dispatcher, queue_task

__all__ = ["dedup_phase", "run_batch"]

# One dispatcher per sessionmaker, held here so in-process tasks it starts are never garbage-collected.
_DISPATCHERS: dict[int, Dispatcher] = {}
_SQLITE_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


def _dispatcher(ctx: TaskContext) -> Dispatcher:
    key = id(ctx.sessionmaker)
    if key not in _DISPATCHERS:
        _DISPATCHERS[key] = make_dispatcher(ctx.settings, ctx.sessionmaker)
    return _DISPATCHERS[key]


def _writer_lock(ctx: TaskContext) -> contextlib.AbstractAsyncContextManager[Any]:
    """On SQLite, one batch at a time per event loop: a read transaction that turns into a write
    while another holds the write lock fails at once instead of waiting. Postgres needs no lock."""
    if not ctx.settings.effective_database_url.startswith("sqlite"):
        return contextlib.nullcontext()
    loop = asyncio.get_running_loop()
    if loop not in _SQLITE_LOCKS:
        _SQLITE_LOCKS[loop] = asyncio.Lock()
    return _SQLITE_LOCKS[loop]


@queue_task("cleaning.run_batch")
async def run_batch(ctx: TaskContext, *, job_id: str, batch_index: int) -> dict[str, Any]:
    """Clean one batch of a job; the last batch queues the dedup phase."""
    async with _writer_lock(ctx), session_scope(ctx.sessionmaker) as session:
        return await jobs.run_batch(session, _dispatcher(ctx), ctx.settings, uuid.UUID(job_id), batch_index)


@queue_task("cleaning.dedup_phase")
async def dedup_phase(ctx: TaskContext, *, job_id: str) -> dict[str, Any]:
    """Global dedup over the kept rows of every batch, then the job succeeds."""
    async with _writer_lock(ctx), session_scope(ctx.sessionmaker) as session:
        return await jobs.dedup_phase(session, uuid.UUID(job_id))
