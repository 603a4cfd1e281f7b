"""insert_ignore / insert_ignore_many against the real test database."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from shared.db.models import TaskExecutionRow
from shared.db.upsert import insert_ignore, insert_ignore_many


async def test_insert_ignore_counts_only_new_rows(session: AsyncSession) -> None:
    rows = [{"key": "upsert-a", "task_name": "t", "attempts": 0}]
    assert await insert_ignore(session, TaskExecutionRow, rows, conflict_columns=["key"]) == 1
    assert await insert_ignore(session, TaskExecutionRow, rows, conflict_columns=["key"]) == 0


async def test_insert_ignore_many_skips_taken_keys_and_keeps_the_first_row(session: AsyncSession) -> None:
    first = [{"key": f"upsert-many-{i}", "task_name": "first", "attempts": 0} for i in range(3)]
    await insert_ignore_many(session, TaskExecutionRow, first, conflict_columns=["key"])
    again = [{"key": f"upsert-many-{i}", "task_name": "second", "attempts": 0} for i in range(1, 5)]
    await insert_ignore_many(session, TaskExecutionRow, again, conflict_columns=["key"])
    await insert_ignore_many(session, TaskExecutionRow, [], conflict_columns=["key"])
    stored = (await session.execute(select(TaskExecutionRow.key, TaskExecutionRow.task_name)
                                    .where(TaskExecutionRow.key.like("upsert-many-%"))
                                    .order_by(TaskExecutionRow.key))).all()
    assert [tuple(r) for r in stored] == [(f"upsert-many-{i}", "first" if i < 3 else "second") for i in range(5)]
