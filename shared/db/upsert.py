"""Portable ``INSERT ... ON CONFLICT DO NOTHING`` for Postgres and SQLite."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import CursorResult
from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["insert_ignore", "insert_ignore_many"]


async def insert_ignore(
    session: AsyncSession,
    model: type[Any],
    rows: Sequence[dict[str, Any]],
    *,
    conflict_columns: Sequence[str],
) -> int:
    """Insert rows, skipping those whose ``conflict_columns`` already exist; returns rows inserted."""
    if not rows:
        return 0
    stmt = _insert_for(session)(model).values(list(rows)).on_conflict_do_nothing(index_elements=list(conflict_columns))
    # An INSERT returns a cursor result, which is what carries rowcount.
    result = cast(CursorResult[Any], await session.execute(stmt))
    return int(result.rowcount or 0)


async def insert_ignore_many(
    session: AsyncSession,
    model: type[Any],
    rows: Sequence[dict[str, Any]],
    *,
    conflict_columns: Sequence[str],
) -> None:
    """``insert_ignore`` as an executemany of one fixed statement, without the row count.

    A multi-row VALUES clause is a new statement for every batch size, so
    SQLAlchemy compiles it afresh each time (milliseconds for a few hundred
    rows, on the event loop); this statement is compiled once and cached,
    which is what hot background writers (the gateway's trace sink) need.
    """
    if not rows:
        return
    stmt = _insert_for(session)(model.__table__).on_conflict_do_nothing(index_elements=list(conflict_columns))
    await session.execute(stmt, list(rows))


def _insert_for(session: AsyncSession) -> Any:
    dialect = session.bind.dialect.name if session.bind is not None else "postgresql"
    return postgresql.insert if dialect == "postgresql" else sqlite.insert
