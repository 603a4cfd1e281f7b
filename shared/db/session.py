"""Engines and sessions: one engine per event loop, commit at the edge.

Services take an ``AsyncSession`` and only ``flush()``; the request
dependency (or the task wrapper) commits on success and rolls back on error.
Tasks queued with ``enqueue_after_commit`` are sent only once the commit
succeeded, and dropped on rollback.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
from sqlalchemy import event
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from shared.settings import Settings

__all__ = ["create_engine_for", "database_unavailable", "engine_of", "json_dumps", "make_sessionmaker",
           "session_scope"]


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.close()


def json_dumps(value: Any) -> str:
    """JSON column values as text: orjson (token-id arrays are long), the standard module for what it refuses.

    orjson writes NaN and infinities as ``null`` where the standard module
    writes ``NaN``, which Postgres refuses in JSON anyway.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value)


def create_engine_for(settings: Settings, *, url: str | None = None) -> AsyncEngine:
    """An async engine for the configured database (SQLite file made if needed)."""
    url = url or settings.effective_database_url
    if url.startswith("sqlite"):
        if ":///" in url and ":memory:" not in url:
            from pathlib import Path

            Path(url.split(":///", 1)[1]).parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, connect_args={"timeout": 30}, json_serializer=json_dumps)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    return create_async_engine(
        url, pool_size=settings.db_pool_size, max_overflow=settings.db_pool_size, pool_pre_ping=True,
        json_serializer=json_dumps,
    )


#: SQLSTATE classes of a server that cannot take work right now: connection exceptions (08) and operator
#: intervention (57P: starting up, shutting down, crashed), as while Postgres restarts.
_UNAVAILABLE_STATES = ("08", "57P")


def database_unavailable(exc: BaseException) -> bool:
    """True for a database error saying the server is unreachable or (re)starting: worth retrying later."""
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    state = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    return isinstance(state, str) and state.startswith(_UNAVAILABLE_STATES)


def engine_of(maker: async_sessionmaker[AsyncSession]) -> AsyncEngine | None:
    """The engine a sessionmaker is bound to (directly, or through one of its connections), if any."""
    bind = maker.kw.get("bind")
    if isinstance(bind, AsyncEngine):
        return bind
    return getattr(bind, "engine", None)


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """Sessions that keep loaded attributes after commit."""
    return async_sessionmaker(engine, expire_on_commit=False)


@asynccontextmanager
async def session_scope(maker: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    """Commit on success, roll back on error, then send the tasks queued after commit."""
    from shared.queue.dispatch import discard_after_commit, flush_after_commit

    async with maker() as session:
        try:
            yield session
            await session.commit()
        except BaseException:
            await session.rollback()
            discard_after_commit(session)
            raise
    await flush_after_commit(session)
