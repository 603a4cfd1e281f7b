"""Portable ``INSERT ... ON CONFLICT DO NOTHING`` for Postgres and SQLite."""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import JSON, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import CursorResult
from sqlalchemy.ext.asyncio import AsyncSession

from shared.db.session import json_dumps

__all__ = ["insert_ignore", "insert_ignore_committed", "insert_ignore_many"]


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


async def insert_ignore_committed(
    session: AsyncSession,
    model: type[Any],
    rows: Sequence[dict[str, Any]],
    *,
    conflict_columns: Sequence[str],
) -> None:
    """``insert_ignore_many`` and commit, for hot background writers (the gateway's trace sink).

    On Postgres through asyncpg the rows go to the driver's ``executemany`` of
    one prepared statement: SQLAlchemy's per-row parameter processing (bind
    processors, a JSON encode per column, the compiled-parameter dicts) costs
    more CPU than the insert itself. The driver's ``executemany`` is atomic, and
    it joins a transaction the session already has open, so either way every
    row is committed, or none, when this returns. Rows must all have the same
    keys; rows that leave out a column with a Python-side default, and other
    databases, take ``insert_ignore_many``.
    """
    if not rows:
        return
    table = model.__table__
    names = tuple(rows[0])
    if _dialect(session) != "postgresql" or not _driver_ready(table, names):
        await insert_ignore_many(session, model, rows, conflict_columns=conflict_columns)
        await session.commit()
        return
    conn = await session.connection()
    driver: Any = (await conn.get_raw_connection()).driver_connection
    if not hasattr(driver, "executemany"):  # another Postgres driver: the portable path
        await insert_ignore_many(session, model, rows, conflict_columns=conflict_columns)
        await session.commit()
        return
    sql, json_at = _driver_statement(table, names, tuple(conflict_columns))
    values_of = operator.itemgetter(*names) if len(names) > 1 else lambda row: (row[names[0]],)
    args: list[list[Any]] = []
    for row in rows:
        values = list(values_of(row))
        for i in json_at:
            values[i] = json_dumps(values[i])
        args.append(values)
    await driver.executemany(sql, args)
    await session.commit()


def _driver_ready(table: Table, names: tuple[str, ...]) -> bool:
    """True when every column left out of ``names`` needs no Python-side default."""
    given = set(names)
    return all(c.name in given or c.default is None for c in table.columns) and given <= set(table.columns.keys())


@functools.lru_cache(maxsize=64)
def _driver_statement(
    table: Table, names: tuple[str, ...], conflict: tuple[str, ...]
) -> tuple[str, tuple[int, ...]]:
    """The INSERT ... ON CONFLICT DO NOTHING text for asyncpg, and the positions of its JSON columns.

    JSON columns get their text (asyncpg's json and jsonb codecs take str), encoded as the engine
    encodes them, so ``None`` is stored as JSON ``null``, as SQLAlchemy's JSON type stores it.
    """
    quote = postgresql.dialect().identifier_preparer.quote  # type: ignore[no-untyped-call]
    cols = ", ".join(quote(n) for n in names)
    params = ", ".join(f"${i}" for i in range(1, len(names) + 1))
    sql = (f"INSERT INTO {quote(table.name)} ({cols}) VALUES ({params}) "
           f"ON CONFLICT ({', '.join(quote(c) for c in conflict)}) DO NOTHING")
    return sql, tuple(i for i, n in enumerate(names) if isinstance(table.columns[n].type, JSON))


def _dialect(session: AsyncSession) -> str:
    return session.bind.dialect.name if session.bind is not None else "postgresql"


def _insert_for(session: AsyncSession) -> Any:
    return postgresql.insert if _dialect(session) == "postgresql" else sqlite.insert
