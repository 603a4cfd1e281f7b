"""Dataset cleaning jobs: one queue task per batch of rows, then one global dedup phase.

Each batch writes the outcome of each of its rows to ``cleaned_row`` (keyed by
job and row index, insert-ignore) and the signatures of its kept rows to
``dedup_signature``, in the same transaction as the job's counters, so a
re-run batch writes nothing twice. The batch that completes the job enqueues
the dedup phase once (guarded by the job row's lock), which marks the losers
of every signature as ``duplicate`` and finishes the job.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.cleaning import datasets
from services.cleaning.base import Row, Step
from services.cleaning.dedup import DedupFilter
from services.cleaning.job_dedup import run_dedup
from services.cleaning.pii_jobs import pooled_pii
from services.cleaning.preprocessor import CleanResult, StepStats
from services.cleaning.reasons import INVALID_ROW
from services.cleaning.rows import INPUT_STEP
from services.cleaning.runner import build_steps, clean_batch, merge_stats, parse_dedup, parse_specs
from services.cleaning.schemas import (
    CleanJobCreate,
    CleanJobRead,
    DropSummary,
    DropSummaryItem,
    StepStatsRead,
)
from services.cleaning.sql_signature_store import SqlSignatureStore
from shared.db.locking import locked_row
from shared.db.models import CleanedRowRow, CleaningJobRow, DatasetRowRow
from shared.db.upsert import insert_ignore
from shared.errors import NotFound
from shared.jsonl import dumps_line
from shared.queue import Dispatcher, enqueue_after_commit
from shared.settings import Settings

__all__ = ["create_job", "dedup_phase", "drop_summary", "get_job", "job_read", "run_batch", "stream_rows"]

_INDEX = "_tf_row_index"  # carried through the steps so each outcome finds its input row
_DROPPED = ("dropped", "invalid")


async def create_job(session: AsyncSession, dispatcher: Dispatcher, body: CleanJobCreate) -> CleaningJobRow:
    """Create a job over a dataset and queue one task per batch (sent after commit)."""
    dataset = await datasets.get_dataset(session, body.dataset_id)
    specs = parse_specs(body.pipeline)
    build_steps(specs)  # a bad pipeline is a 400 now, not a failed job later
    dedup = parse_dedup(body.dedup)
    batches = math.ceil(dataset.row_count / body.batch_size)
    job = CleaningJobRow(
        dataset_id=dataset.id, status="running", total=dataset.row_count,
        pipeline=[s.model_dump() for s in specs],
        options={"dedup": dedup.model_dump() if dedup else None, "batch_size": body.batch_size,
                 "batches": batches, "batches_done": 0, "dedup_enqueued": False},
    )
    session.add(job)
    await session.flush()
    for index in range(batches):
        enqueue_after_commit(session, dispatcher, "cleaning.run_batch", job_id=str(job.id), batch_index=index)
    if batches == 0:  # nothing to clean: finish through the same phase
        job.options = dict(job.options, dedup_enqueued=True)
        enqueue_after_commit(session, dispatcher, "cleaning.dedup_phase", job_id=str(job.id))
    return job


async def get_job(session: AsyncSession, job_id: uuid.UUID, *, lock: bool = False) -> CleaningJobRow:
    """The job (optionally locked for a counter update), or a 404."""
    if lock:
        # NO KEY UPDATE: does not wait on the key-share locks that cleaned_row inserts take on the job.
        job = await locked_row(session, CleaningJobRow, job_id, key_share=True)
    else:
        stmt = select(CleaningJobRow).where(CleaningJobRow.id == job_id).execution_options(populate_existing=True)
        job = (await session.execute(stmt)).scalar_one_or_none()
    if job is None:
        raise NotFound(f"no cleaning job with id {job_id}")
    return job


def job_read(job: CleaningJobRow) -> CleanJobRead:
    """The API view of a job."""
    return CleanJobRead(
        id=str(job.id), dataset_id=str(job.dataset_id), status=job.status, total=job.total, done=job.done,
        kept=job.kept, dropped=job.dropped, invalid=job.invalid, batches=job.options.get("batches", 0),
        batches_done=job.options.get("batches_done", 0), dedup=job.options.get("dedup"),
        stats=[StepStatsRead.model_validate(s) for s in job.stats.get("steps", [])], error=job.error,
        created_at=job.created_at, updated_at=job.updated_at,
    )


async def _batch_inputs(
    session: AsyncSession, job: CleaningJobRow, batch_index: int
) -> tuple[list[Row], list[dict[str, Any]]]:
    size = int(job.options["batch_size"])
    stmt = (select(DatasetRowRow).where(DatasetRowRow.dataset_id == job.dataset_id,
                                        DatasetRowRow.row_index >= batch_index * size,
                                        DatasetRowRow.row_index < (batch_index + 1) * size)
            .order_by(DatasetRowRow.row_index))
    values: list[Row] = []
    unreadable: list[dict[str, Any]] = []
    for row in (await session.execute(stmt)).scalars():
        if row.data is None:
            unreadable.append({"job_id": job.id, "row_index": row.row_index, "outcome": "invalid",
                               "step": INPUT_STEP, "reason": INVALID_ROW, "data": {"drop_detail": row.error}})
        else:
            values.append({**row.data, _INDEX: row.row_index})
    return values, unreadable


def _record(job_id: uuid.UUID, outcome: str, row: Row) -> dict[str, Any]:
    index = row.pop(_INDEX)
    step = reason = None
    if outcome != "kept":
        step, reason = row.get("drop_step"), row.get("drop_reason")
    return {"job_id": job_id, "row_index": index, "outcome": outcome, "step": step, "reason": reason, "data": row}


def _records(job_id: uuid.UUID, result: CleanResult) -> list[dict[str, Any]]:
    out = [_record(job_id, "kept", r) for r in result.kept]
    out += [_record(job_id, "dropped", r) for r in result.dropped]
    return out + [_record(job_id, "invalid", r) for r in result.invalid]


async def _clean(job: CleaningJobRow, values: list[Row], settings: Settings) -> CleanResult:
    steps: list[Step] = pooled_pii(build_steps(job.pipeline), processes=settings.pii_processes)
    # CPU-bound: a thread keeps the event loop (progress requests, other tasks) responsive.
    return await asyncio.to_thread(clean_batch, values, steps)


async def run_batch(session: AsyncSession, dispatcher: Dispatcher, settings: Settings, job_id: uuid.UUID,
                    batch_index: int) -> dict[str, Any]:
    """Clean one batch of the job's dataset and record its outcomes once."""
    job = await get_job(session, job_id)
    values, unreadable = await _batch_inputs(session, job, batch_index)
    result = await _clean(job, values, settings)
    dedup = parse_dedup(job.options.get("dedup"))
    if dedup is not None and dedup.exact:
        entries = DedupFilter().entries(result.kept)
        positions = [r[_INDEX] for r in result.kept]
        await SqlSignatureStore(session, job.id).add((sig, n, positions[i]) for sig, n, i in entries)
    records = _records(job.id, result) + unreadable
    inserted = await insert_ignore(session, CleanedRowRow, records, conflict_columns=["job_id", "row_index"])
    if inserted == 0 and records:
        return {"inserted": 0}  # a redelivered batch: its outcomes and counters are already recorded
    await _count_batch(session, dispatcher, job_id, result, len(unreadable))
    return {"inserted": inserted}


async def _count_batch(session: AsyncSession, dispatcher: Dispatcher, job_id: uuid.UUID, result: CleanResult,
                       unreadable: int) -> None:
    job = await get_job(session, job_id, lock=True)
    job.done += result.total_in + unreadable
    job.kept += len(result.kept)
    job.dropped += len(result.dropped)
    job.invalid += len(result.invalid) + unreadable
    steps = merge_stats([StepStats.model_validate(s) for s in job.stats.get("steps", [])], result.stats)
    job.stats = {"steps": [s.model_dump() for s in steps]}
    options = dict(job.options, batches_done=job.options["batches_done"] + 1)
    if options["batches_done"] >= options["batches"] and not options["dedup_enqueued"]:
        options["dedup_enqueued"] = True
        enqueue_after_commit(session, dispatcher, "cleaning.dedup_phase", job_id=str(job_id))
    job.options = options
    await session.flush()


async def dedup_phase(session: AsyncSession, job_id: uuid.UUID) -> dict[str, Any]:
    """Mark the losers of the global dedup as duplicates, recount and finish the job."""
    job = await get_job(session, job_id, lock=True)
    if job.status == "succeeded":
        return {"skipped": True}
    dedup = parse_dedup(job.options.get("dedup"))
    stats = await run_dedup(session, job.id, dedup) if dedup is not None else []
    counts = dict((await session.execute(
        select(CleanedRowRow.outcome, func.count()).where(CleanedRowRow.job_id == job.id)
        .group_by(CleanedRowRow.outcome))).tuples().all())
    job.kept, job.dropped, job.invalid = (int(counts.get(k, 0)) for k in ("kept", "dropped", "invalid"))
    steps = [StepStats.model_validate(s) for s in job.stats.get("steps", [])] + stats
    job.stats = {"steps": [s.model_dump() for s in steps]}
    job.status = "succeeded"
    await session.flush()
    return {"kept": job.kept, "dropped": job.dropped, "invalid": job.invalid}


def _dropped_line(row: CleanedRowRow) -> bytes:
    data = row.data if isinstance(row.data, dict) else {"value": row.data}
    evidence = data.get("drop_evidence")
    if not isinstance(evidence, dict):
        # Rows demoted by the global dedup phase were stored as kept rows: say what fired now.
        evidence = {"check": row.reason}
        if row.reason == "duplicate" and isinstance(data.get("messages"), list):
            evidence["signature"] = DedupFilter().signature(data).hex()
        if row.reason == INVALID_ROW and data.get("drop_detail"):
            evidence["detail"] = data["drop_detail"]
    return dumps_line({**data, "drop_step": row.step, "drop_reason": row.reason, "drop_evidence": evidence})


async def stream_rows(maker: async_sessionmaker[AsyncSession], job_id: uuid.UUID, *, kept: bool,
                      reason: str | None = None, page_size: int = 500) -> AsyncIterator[bytes]:
    """JSONL of the job's kept (or dropped and invalid) rows in input order, read page by page."""
    outcomes = ("kept",) if kept else _DROPPED
    last = -1
    while True:
        stmt = (select(CleanedRowRow).where(CleanedRowRow.job_id == job_id, CleanedRowRow.outcome.in_(outcomes),
                                            CleanedRowRow.row_index > last)
                .order_by(CleanedRowRow.row_index).limit(page_size))
        if reason is not None:
            stmt = stmt.where(CleanedRowRow.reason == reason)
        async with maker() as session:
            rows = list((await session.execute(stmt)).scalars())
        if not rows:
            return
        yield b"".join(dumps_line(r.data) if kept else _dropped_line(r) for r in rows)
        last = rows[-1].row_index


async def drop_summary(session: AsyncSession, job_id: uuid.UUID) -> DropSummary:
    """Dropped and invalid rows counted by step and reason."""
    await get_job(session, job_id)
    stmt = (select(CleanedRowRow.step, CleanedRowRow.reason, func.count())
            .where(CleanedRowRow.job_id == job_id, CleanedRowRow.outcome.in_(_DROPPED))
            .group_by(CleanedRowRow.step, CleanedRowRow.reason).order_by(func.count().desc()))
    items = [DropSummaryItem(step=s, reason=r, count=int(n)) for s, r, n in (await session.execute(stmt)).tuples()]
    return DropSummary(job_id=str(job_id), items=items)
