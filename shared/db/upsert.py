"""Portable ``INSERT ... ON CONFLICT DO NOTHING`` for Postgres and SQLite."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import CursorResult
from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["insert_ignore"]


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
    dialect = session.bind.dialect.name if session.bind is not None else "postgresql"
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(model).values(list(rows)).on_conflict_do_nothing(index_elements=list(conflict_columns))
    # An INSERT returns a cursor result, which is what carries rowcount.
    result = cast(CursorResult[Any], await session.execute(stmt))
    return int(result.rowcount or 0)
