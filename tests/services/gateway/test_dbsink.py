"""DbTraceSink against Postgres: batched writes, reads across sinks in the database's order, failures logged."""

from __future__ import annotations

import asyncio
import logging

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from services.gateway.dbsink import DbTraceSink
from shared.db.session import make_sessionmaker
from shared.traces import TraceRecord


def _record(session_id: str | None, seq: int, **extra: object) -> TraceRecord:
    fields: dict[str, object] = {"request": {"messages": []}, **extra}
    return TraceRecord(session_id=session_id, sequence=seq, endpoint="/v1/chat/completions", model="m",
                       prompt_token_ids=[1, 2], completion_token_ids=[3], logprobs=[-0.5],
                       **fields)  # type: ignore[arg-type]


async def test_records_are_batched_and_read_back_in_arrival_order(
        sessionmaker: async_sessionmaker[AsyncSession]) -> None:
    sink = DbTraceSink(sessionmaker, batch_size=2)
    for seq in (2, 0, 1):  # a replica's own count is not the order: arrival is
        await sink.write(_record("a", seq, attempt=1, request={"messages": [], "n": seq}))
    await sink.write(_record(None, 0))
    records = await sink.session("a")
    await sink.close()
    assert [r.sequence for r in records] == [0, 1, 2] and [r.request["n"] for r in records] == [2, 0, 1]
    assert {r.attempt for r in records} == {1}
    assert records[0].completion_token_ids == [3] and records[0].logprobs == [-0.5]
    assert sink.written == 4 and sink.lost == 0


async def test_two_sinks_counting_alike_both_keep_their_records(sessionmaker: async_sessionmaker[AsyncSession]) -> None:
    # Two gateway processes each number the session from 0: both records stay, in the order they arrived.
    first, second = DbTraceSink(sessionmaker), DbTraceSink(sessionmaker)
    early = _record("b", 0, status="ok")
    late = _record("b", 0, status="error", error_code="upstream_error")
    await second.write(late)  # the later call's row lands first: the arrival time still orders it
    await second.flush()
    await first.write(early.model_copy(update={"created_at": late.created_at - 1.0}))
    await first.flush()
    records = await second.session("b")
    await first.close()
    await second.close()
    assert [(r.sequence, r.status) for r in records] == [(0, "ok"), (1, "error")]
    assert records[1].error_code == "upstream_error"


async def test_a_batch_written_twice_stores_each_record_once(sessionmaker: async_sessionmaker[AsyncSession]) -> None:
    sink = DbTraceSink(sessionmaker)
    record = _record("d", 0)
    await sink.write(record)
    await sink.write(record)  # a retried batch whose first commit went through
    records = await sink.session("d")
    await sink.close()
    assert [r.id for r in records] == [record.id]


async def test_a_failed_write_is_retried_then_logged_with_the_record(caplog: pytest.LogCaptureFixture) -> None:
    engine = create_async_engine("postgresql+asyncpg://postgres@127.0.0.1:1/none")
    sink = DbTraceSink(make_sessionmaker(engine), write_attempts=2, retry_base_s=0.01)
    with caplog.at_level(logging.ERROR, logger="services.gateway.dbsink"):
        await sink.write(_record("c", 0))
        await sink.flush()
    await sink.close()
    await engine.dispose()
    assert sink.lost == 1 and sink.written == 0
    [entry] = [r for r in caplog.records if "not stored" in r.getMessage()]
    assert entry.trace["session_id"] == "c" and entry.trace["completion_token_ids"] == [3]  # type: ignore[attr-defined]


async def test_shutdown_writes_everything_queued_without_waiting_out_the_linger(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    # An hour's linger: only close() cutting it short lets this finish (the bound is generous, not a speed test).
    sink = DbTraceSink(sessionmaker, batch_size=7, linger_s=3600)
    for seq in range(50):
        await sink.write(_record("z", seq))
    await sink.write(_record(None, 0))
    await asyncio.wait_for(sink.close(), 120)
    assert sink.written == 51 and sink.lost == 0 and sink.batches == 8
    reader = DbTraceSink(sessionmaker)
    assert [r.sequence for r in await reader.session("z")] == list(range(50))
    await reader.close()


async def test_records_arriving_while_a_batch_lingers_share_its_transaction(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    sink = DbTraceSink(sessionmaker, linger_s=3600)
    await sink.write(_record("y", 0))
    await asyncio.sleep(0.05)  # the flusher has taken the first record and lingers
    for seq in range(1, 5):
        await sink.write(_record("y", seq))
    records = await sink.session("y")
    await sink.close()
    assert [r.sequence for r in records] == [0, 1, 2, 3, 4] and sink.batches == 1


async def test_a_cancel_landing_as_a_lingering_batch_is_hurried_stops_the_flusher(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    # A flush (which hurries the batch) and a stop in the same turn: the flusher must end, not run on.
    sink = DbTraceSink(sessionmaker, linger_s=3600)
    await sink.write(_record("w", 0))
    await asyncio.sleep(0.05)  # the flusher has taken the record and lingers
    task = sink._task
    assert task is not None
    sink._hurry.set()
    task.cancel()
    done, _ = await asyncio.wait([task], timeout=5)
    assert done and task.cancelled()  # (the lingering record is abandoned with the sink: no close here)
