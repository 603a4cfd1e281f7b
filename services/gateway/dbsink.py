"""``DbTraceSink``: trace records into the ``gateway_trace`` table, buffered and batched.

``write`` only queues the record (a bounded queue, so a stalled database slows
callers down instead of growing memory); a background flusher inserts what is
queued in batches, one transaction each (one prepared ``INSERT ... ON CONFLICT
DO NOTHING`` run for every row), off the request path. After the first record
of a batch it lingers up to ``linger_s`` for more, so a trickle of calls still shares transactions (the
per-transaction cost dominates a single row's); ``flush`` and ``close`` cut the
linger short. A failed batch is retried with backoff; after the last attempt
each record is logged in full so nothing is lost silently. Reads (``session``)
first wait for what this process has queued, then read the table, so they work
across processes; ``close`` (the app's shutdown) writes everything queued.

Several gateway replicas may append to one session, so the order of a session's
calls comes from what every replica shares, never from a counter kept in one
process: rows are read in (attempt, ``created_at``, ``log_id``) order, where
``created_at`` is when the answering gateway received the call and ``log_id`` is
numbered by the database at insert (ties, and a stable order for any reader).
Arrival time leads because a replica writes its queue in the background: the
next call of a session may reach another replica and be inserted before this
one's batch lands, while it always arrives after this call was answered. Each
read numbers the calls 0, 1, 2, ... per attempt (``TraceRecord.sequence``), with
no gaps. A batch written again after a failed commit is idempotent by row id.
A reader flushes only its own replica's queue: a call another replica answered
shows once that replica's flusher has written it (normally within one batch).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shared.aio import wait_event
from shared.db.models import GatewayTraceRow
from shared.db.upsert import insert_ignore_committed
from shared.ids import fast_uuid4
from shared.traces import TraceRecord

__all__ = ["DbTraceSink", "record_from_row", "row_from_record"]

log = logging.getLogger(__name__)
_ID = ("id",)


def _uuid(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(value) if value else None
    except ValueError:
        return None


def row_from_record(record: TraceRecord) -> dict[str, Any]:
    """Column values of one record."""
    return {
        "id": _uuid(record.id) or fast_uuid4(), "session_id": record.session_id, "attempt": record.attempt or 0,
        "seq": record.sequence, "api_key_id": _uuid(record.api_key_id), "model": record.model,
        "endpoint": record.endpoint, "upstream": record.replica, "request": record.request,
        "response": record.response, "prompt_token_ids": record.prompt_token_ids,
        "completion_token_ids": record.completion_token_ids, "logprobs": record.logprobs,
        "finish_reason": record.finish_reason, "usage": record.usage, "parse_statuses": record.parse_statuses,
        "status_code": record.http_status, "status": record.status, "error_code": record.error_code,
        "error": record.error_message, "latency_ms": record.latency_ms, "retries": record.retries,
        "stream": record.stream, "weight_version": record.weight_version,
        "created_at": datetime.fromtimestamp(record.created_at, UTC),
    }


def record_from_row(row: GatewayTraceRow) -> TraceRecord:
    """The record a row stores."""
    return TraceRecord(
        id=row.id.hex, session_id=row.session_id, attempt=row.attempt, sequence=row.seq, endpoint=row.endpoint,
        model=row.model, replica=row.upstream, stream=row.stream, request=row.request, response=row.response,
        prompt_token_ids=row.prompt_token_ids, completion_token_ids=row.completion_token_ids,
        logprobs=row.logprobs, finish_reason=row.finish_reason, usage=row.usage,
        latency_ms=row.latency_ms or 0.0, retries=row.retries, weight_version=row.weight_version,
        status="error" if row.status == "error" else "ok", http_status=row.status_code or 0,
        error_code=row.error_code, error_message=row.error, parse_statuses=list(row.parse_statuses or []),
        api_key_id=row.api_key_id.hex if row.api_key_id else None, created_at=row.created_at.timestamp(),
    )


class DbTraceSink:
    """Buffers trace records and writes them to the database in batches."""

    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession], *, queue_size: int = 10_000,
        batch_size: int = 256, write_attempts: int = 3, retry_base_s: float = 0.2, linger_s: float = 0.05,
    ) -> None:
        self.sessionmaker = sessionmaker
        self.batch_size = batch_size
        self.write_attempts = write_attempts
        self.retry_base_s = retry_base_s
        self.linger_s = linger_s
        self.written = 0
        self.lost = 0
        #: Transactions written (each holds one batch).
        self.batches = 0
        self._queue: asyncio.Queue[TraceRecord] = asyncio.Queue(maxsize=queue_size)
        self._task: asyncio.Task[None] | None = None
        # Set while someone waits for the queue to drain: the flusher stops lingering.
        self._hurry = asyncio.Event()
        self._flushing = 0

    def start(self) -> None:
        """Start the background flusher on the running loop."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="gateway-trace-flusher")

    async def write(self, record: TraceRecord) -> None:
        """Queue one record (waits while the queue is full)."""
        self.start()
        await self._queue.put(record)

    async def flush(self) -> None:
        """Wait until every record queued so far has been written (or logged as lost)."""
        if self._queue.qsize() or self._queue._unfinished_tasks:  # type: ignore[attr-defined]
            self.start()
            self._flushing += 1
            self._hurry.set()
            try:
                await self._queue.join()
            finally:
                self._flushing -= 1
                if not self._flushing:
                    self._hurry.clear()

    async def session(self, session_id: str) -> list[TraceRecord]:
        """All records of a session in the database's order, numbered 0, 1, ... per attempt."""
        await self.flush()
        async with self.sessionmaker() as db:
            stmt = (select(GatewayTraceRow).where(GatewayTraceRow.session_id == session_id)
                    .order_by(GatewayTraceRow.attempt, GatewayTraceRow.created_at, GatewayTraceRow.log_id))
            rows = (await db.execute(stmt)).scalars().all()
        return _numbered([record_from_row(r) for r in rows])

    async def close(self) -> None:
        """Flush what is queued, then stop the flusher."""
        await self.flush()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            await self._linger()
            while len(batch) < self.batch_size and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                await self._write_with_retries(batch)
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def _write_with_retries(self, batch: list[TraceRecord]) -> None:
        for attempt in range(self.write_attempts):
            try:
                await self._write(batch)
                self.written += len(batch)
                self.batches += 1
                return
            except Exception as exc:  # noqa: BLE001 - any database failure: retry, then log the records
                if attempt + 1 == self.write_attempts:
                    self._log_lost(batch, exc)
                    return
                await asyncio.sleep(self.retry_base_s * 2**attempt)

    def _log_lost(self, batch: list[TraceRecord], exc: Exception) -> None:
        self.lost += len(batch)
        for record in batch:
            log.error("gateway trace not stored: %r", exc, extra={"trace": record.model_dump(mode="json")})

    async def _linger(self) -> None:
        """Give a batch up to ``linger_s`` to fill, unless it is full already or a flush is waiting."""
        if self.linger_s <= 0 or self._queue.qsize() + 1 >= self.batch_size or self._hurry.is_set():
            return
        await wait_event(self._hurry, self.linger_s)

    async def _write(self, batch: list[TraceRecord]) -> None:
        async with self.sessionmaker() as db:
            await insert_ignore_committed(db, GatewayTraceRow, [row_from_record(r) for r in batch],
                                          conflict_columns=_ID)


def _numbered(records: list[TraceRecord]) -> list[TraceRecord]:
    """Number records 0, 1, ... within each attempt, in the order given."""
    counts: dict[int | None, int] = {}
    for record in records:
        record.sequence = counts.get(record.attempt, 0)
        counts[record.attempt] = record.sequence + 1
    return records
