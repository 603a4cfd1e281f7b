"""insert_ignore / insert_ignore_many / insert_ignore_committed against the real test database."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.gateway.dbsink import row_from_record
from shared.db.models import GatewayTraceRow, TaskExecutionRow
from shared.db.upsert import insert_ignore, insert_ignore_committed, insert_ignore_many
from shared.traces import TraceRecord


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


async def test_insert_ignore_committed_stores_what_insert_ignore_many_stores(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    """The driver path (Postgres) and the portable one write the same values, JSON nulls included,
    skip taken keys, and commit."""
    def rows(tag: str) -> list[dict[str, Any]]:
        return [row_from_record(TraceRecord(
            id=uuid.UUID(int=i + (1000 if tag == "many" else 2000)).hex, session_id=f"upsert-{tag}", attempt=1,
            sequence=i, endpoint="/v1/chat/completions", model="m", replica="r0", stream=False,
            request={"messages": [{"role": "user", "content": "héllo \u2028"}], "n": i},
            response=None if i == 0 else {"choices": [{"text": "x"}]}, prompt_token_ids=[1, 2, i],
            usage={"prompt_tokens": 3}, latency_ms=1.5, api_key_id=uuid.UUID(int=7).hex, created_at=1.7e9 + i,
        )) for i in range(3)]

    def strip(row: GatewayTraceRow) -> tuple[Any, ...]:
        return (row.attempt, row.seq, row.request, row.response, row.prompt_token_ids, row.completion_token_ids,
                row.usage, row.latency_ms, row.api_key_id, row.status, row.stream, row.created_at.timestamp())

    async with sessionmaker() as db:
        await insert_ignore_many(db, GatewayTraceRow, rows("many"), conflict_columns=["id"])
        await db.commit()
    async with sessionmaker() as db:
        fast = rows("fast")
        await insert_ignore_committed(db, GatewayTraceRow, fast, conflict_columns=["id"])
        # Taken ids are skipped; the first write stays.
        await insert_ignore_committed(db, GatewayTraceRow, [{**fast[0], "latency_ms": 9.0}], conflict_columns=["id"])
        await insert_ignore_committed(db, GatewayTraceRow, [], conflict_columns=["id"])
    async with sessionmaker() as db:
        by_tag = {}
        for tag in ("many", "fast"):
            stored = (await db.execute(select(GatewayTraceRow).where(GatewayTraceRow.session_id == f"upsert-{tag}")
                                       .order_by(GatewayTraceRow.seq))).scalars().all()
            by_tag[tag] = [strip(r) for r in stored]
            json_null = (await db.execute(text(
                "SELECT count(*) FROM gateway_trace WHERE session_id = :s AND response IS NULL"), {"s": f"upsert-{tag}"}
            )).scalar_one()
            by_tag[tag + "-sql-nulls"] = json_null
    assert len(by_tag["fast"]) == 3
    assert by_tag["fast"] == by_tag["many"]
    assert by_tag["fast-sql-nulls"] == by_tag["many-sql-nulls"]
    assert by_tag["fast"][0][7] == 1.5
