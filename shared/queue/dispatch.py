"""Sending work: Celery when a broker is configured, in-process otherwise.

Both dispatchers take the same ``(name, kwargs)``; services never know which
one runs. Work queued in a request is buffered on the session with
``enqueue_after_commit`` and sent only once that session committed.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shared.settings import Settings

__all__ = [
    "CeleryDispatcher",
    "Dispatcher",
    "InProcessDispatcher",
    "discard_after_commit",
    "enqueue_after_commit",
    "flush_after_commit",
    "make_dispatcher",
]

log = logging.getLogger("trajforge.queue")
_PENDING = "trajforge_after_commit"
#: The longest wait between in-process retries (Celery's ``retry_backoff_max``).
_BACKOFF_MAX_S = 600.0
_DISPATCHER = "trajforge_dispatcher"


class Dispatcher(Protocol):
    """Sends a registered task for execution."""

    async def send(self, name: str, kwargs: dict[str, Any]) -> None: ...


class CeleryDispatcher:
    """Sends tasks to Celery workers through Redis."""

    def __init__(self, settings: Settings) -> None:
        from shared.queue.app import configure_celery

        self._app = configure_celery(settings)

    async def send(self, name: str, kwargs: dict[str, Any]) -> None:
        await asyncio.to_thread(self._app.send_task, name, kwargs=kwargs)


class InProcessDispatcher:
    """Runs tasks as asyncio tasks in this process (the embedded default)."""

    def __init__(self, settings: Settings, sessionmaker: async_sessionmaker[AsyncSession], *,
                 task_modules: Sequence[str] = ()) -> None:
        from shared.queue.app import load_task_modules

        load_task_modules(task_modules)  # the same task bodies a Celery worker would load
        self._settings = settings
        self._maker = sessionmaker
        self._running: set[asyncio.Task[Any]] = set()

    async def send(self, name: str, kwargs: dict[str, Any]) -> None:
        task = asyncio.create_task(self._run(name, kwargs), name=name)
        self._running.add(task)
        task.add_done_callback(self._done)

    async def _run(self, name: str, kwargs: dict[str, Any]) -> Any:
        """Run the task; a transient failure is retried with backoff, as a Celery worker would."""
        from shared.queue.tasks import REGISTRY, run_task

        spec = REGISTRY[name]
        retries = 0
        while True:
            try:
                return await run_task(name, kwargs, settings=self._settings, sessionmaker=self._maker)
            except spec.transient as exc:
                if retries >= spec.max_retries:
                    raise
                # Celery's retry_backoff (2**n times the factor), with half of each wait fixed: full
                # jitter can spend every retry in a blink, before a restarting database is back.
                ceiling = min(_BACKOFF_MAX_S, self._settings.queue_retry_backoff_s * 2 ** retries)
                delay = random.uniform(ceiling / 2, ceiling)
                retries += 1
                log.warning("in-process task %s failed (%s); retry %d of %d in %.1f s",
                            name, exc, retries, spec.max_retries, delay)
                await asyncio.sleep(delay)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._running.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("in-process task %s failed: %s", task.get_name(), task.exception())

    async def drain(self) -> None:
        """Wait until every task sent so far (and any they sent) has finished."""
        while self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)


def make_dispatcher(settings: Settings, sessionmaker: async_sessionmaker[AsyncSession], *,
                    task_modules: Sequence[str] = ()) -> Dispatcher:
    """Celery if ``TRAJFORGE_REDIS_URL`` is set, in-process (running ``task_modules``' tasks) otherwise."""
    if settings.redis_url:
        return CeleryDispatcher(settings)
    return InProcessDispatcher(settings, sessionmaker, task_modules=task_modules)


def enqueue_after_commit(session: AsyncSession, dispatcher: Dispatcher, name: str, **kwargs: Any) -> None:
    """Buffer a task on the session; it is sent after the session commits."""
    session.info.setdefault(_PENDING, []).append((dispatcher, name, kwargs))


def discard_after_commit(session: AsyncSession) -> None:
    """Drop buffered tasks (the transaction rolled back)."""
    session.info.pop(_PENDING, None)


async def flush_after_commit(session: AsyncSession) -> None:
    """Send the tasks buffered on a committed session."""
    for dispatcher, name, kwargs in session.info.pop(_PENDING, []):
        await dispatcher.send(name, kwargs)
