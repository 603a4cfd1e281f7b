"""Rows locked for a read-modify-write (job counters), on Postgres and on the embedded SQLite alike."""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from shared.db.base import Base

__all__ = ["locked_row"]

M = TypeVar("M", bound=Base)


async def locked_row(session: AsyncSession, model: type[M], row_id: Any, *, key_share: bool = False) -> M | None:
    """The row of ``model`` with this id, locked until the transaction ends (None if there is none).

    Postgres: ``SELECT ... FOR UPDATE`` (``FOR NO KEY UPDATE`` with ``key_share``). SQLite has no row
    locks and opens a transaction only at its first write, so a plain read would see counters that a
    concurrent writer is about to replace, and the last commit would win. A no-op write of the row
    first takes the database's write lock (other writers wait, up to the busy timeout), so the read
    sees the latest commit and nobody writes until this transaction ends.
    """
    table: Any = model.__table__
    if session.get_bind().dialect.name == "sqlite":
        column = next(c for c in table.columns if not c.primary_key)
        await session.execute(update(table).where(table.c.id == row_id).values({column.name: column})
                              .execution_options(synchronize_session=False))
    stmt = (select(model).where(table.c.id == row_id).execution_options(populate_existing=True)
            .with_for_update(key_share=key_share))
    return (await session.execute(stmt)).scalar_one_or_none()
