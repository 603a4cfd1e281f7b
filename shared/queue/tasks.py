"""Declaring queue tasks once, for Celery workers and the in-process runner alike.

``@queue_task("cleaning.run_batch")`` registers an async body that takes a
``TaskContext`` and JSON-able keyword arguments (ids and ints, never ORM
objects). The same body runs in a Celery worker (inside ``asyncio.run``) or
in-process in the embedded default. Every run is recorded in
``task_execution`` under an idempotency key built from the task name and its
arguments: a task that already succeeded is not run again, and bodies write
their effects with ``insert_ignore`` so a redelivered task records each
effect once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shared.db.base import utcnow
from shared.db.models import TaskExecutionRow
from shared.db.session import database_unavailable
from shared.db.upsert import insert_ignore
from shared.errors import ServiceUnavailable, UpstreamUnavailable
from shared.queue.app import celery_app
from shared.settings import Settings, get_settings

__all__ = ["REGISTRY", "TaskContext", "TaskSpec", "queue_task", "run_task", "task_key"]

log = logging.getLogger("trajforge.queue")

TaskBody = Callable[..., Awaitable[Any]]


@dataclass(slots=True)
class TaskContext:
    """What a task body gets besides its arguments."""

    settings: Settings
    sessionmaker: async_sessionmaker[AsyncSession]
    key: str
    attempt: int


@dataclass(slots=True)
class TaskSpec:
    name: str
    body: TaskBody
    transient: tuple[type[BaseException], ...] = field(default_factory=tuple)
    #: Re-runs after a transient failure (Celery's ``max_retries``; the in-process runner keeps the same count).
    max_retries: int = 0


REGISTRY: dict[str, TaskSpec] = {}


def task_key(name: str, kwargs: dict[str, Any]) -> str:
    """Idempotency key: the task name and its arguments in a canonical order."""
    return f"{name}:{orjson.dumps(kwargs, option=orjson.OPT_SORT_KEYS).decode()}"


async def _begin(ctx_maker: async_sessionmaker[AsyncSession], key: str, name: str) -> tuple[bool, int]:
    """Record the start of a run; returns (already_succeeded, attempt number)."""
    async with ctx_maker() as session:
        await insert_ignore(session, TaskExecutionRow, [{"key": key, "task_name": name, "attempts": 0}],
                            conflict_columns=["key"])
        stmt = select(TaskExecutionRow).where(TaskExecutionRow.key == key).with_for_update()
        row = (await session.execute(stmt)).scalar_one()
        if row.status == "succeeded":
            await session.commit()
            return True, row.attempts
        row.attempts += 1
        row.status = "running"
        row.started_at = utcnow()
        attempt = row.attempts
        await session.commit()
        return False, attempt


async def _finish(maker: async_sessionmaker[AsyncSession], key: str, *, result: Any, error: str | None) -> None:
    async with maker() as session:
        row = await session.get(TaskExecutionRow, key)
        if row is not None:
            row.status = "failed" if error else "succeeded"
            row.finished_at = utcnow()
            row.error = error
            row.result = result if isinstance(result, dict) else {"value": result}
        await session.commit()


async def run_task(
    name: str,
    kwargs: dict[str, Any],
    *,
    settings: Settings,
    sessionmaker: async_sessionmaker[AsyncSession],
) -> Any:
    """Run a registered task body once under its idempotency key."""
    spec = REGISTRY[name]
    key = task_key(name, kwargs)
    try:
        done, attempt = await _begin(sessionmaker, key, name)
    except DBAPIError as exc:
        # A Postgres still starting after a restart: the delivery is retried (ServiceUnavailable is
        # transient), never dropped with the work it carried.
        if database_unavailable(exc):
            raise ServiceUnavailable(f"the database is not available: {exc.orig}") from exc
        raise
    if done:
        log.info("task already succeeded, skipping", extra={"task": name, "key": key})
        return None
    ctx = TaskContext(settings=settings, sessionmaker=sessionmaker, key=key, attempt=attempt)
    try:
        result = await spec.body(ctx, **kwargs)
    except spec.transient:
        raise
    except Exception as exc:
        await _finish(sessionmaker, key, result=None, error=f"{type(exc).__name__}: {exc}")
        raise
    await _finish(sessionmaker, key, result=result, error=None)
    return result


async def _run_in_worker(name: str, kwargs: dict[str, Any]) -> Any:
    from shared.db.session import create_engine_for, make_sessionmaker

    settings = get_settings()
    engine = create_engine_for(settings)
    try:
        return await run_task(name, kwargs, settings=settings, sessionmaker=make_sessionmaker(engine))
    finally:
        await engine.dispose()


def queue_task(
    name: str,
    *,
    transient: tuple[type[BaseException], ...] = (UpstreamUnavailable, ServiceUnavailable),
    max_retries: int = 5,
) -> Callable[[TaskBody], TaskBody]:
    """Register an async task body under a dotted ``<service>.<verb_noun>`` name."""

    def register(body: TaskBody) -> TaskBody:
        REGISTRY[name] = TaskSpec(name=name, body=body, transient=transient, max_retries=max_retries)

        def celery_entry(**kwargs: Any) -> Any:
            return asyncio.run(_run_in_worker(name, kwargs))

        celery_entry.__name__ = name.replace(".", "_")
        celery_app.task(
            name=name,
            acks_late=True,
            reject_on_worker_lost=True,
            autoretry_for=transient,
            retry_backoff=True,
            max_retries=max_retries,
        )(celery_entry)
        return body

    return register
