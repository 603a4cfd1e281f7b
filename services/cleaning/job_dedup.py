"""The global dedup phase of a cleaning job, over the kept rows of all its batches.

Exact dedup needs no second read of the rows: each batch already stored its
kept rows' signatures (``SqlSignatureStore``), so one UPDATE marks every kept
row that is not its signature's winner. Near-duplicate detection reads the
kept rows page by page into one MinHash index.
"""

from __future__ import annotations

import time
import uuid

from sqlalchemy import delete, exists, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from services.cleaning.dedup import DROP_REASON, DedupFilter
from services.cleaning.near_dedup import DROP_REASON as NEAR_REASON
from services.cleaning.near_dedup import NearDedupFilter, NearDedupIndex
from services.cleaning.preprocessor import StepStats
from services.cleaning.runner import DedupOptions
from shared.db.models import CleanedRowRow, DedupSignatureRow

__all__ = ["run_dedup"]

_PAGE = 1000


async def _kept_count(session: AsyncSession, job_id: uuid.UUID) -> int:
    stmt = select(func.count()).where(CleanedRowRow.job_id == job_id, CleanedRowRow.outcome == "kept")
    return int(await session.scalar(stmt) or 0)


def _stats(step: str, reason: str, rows_in: int, dropped: int, started: float) -> StepStats:
    return StepStats(step=step, rows_in=rows_in, rows_out=rows_in - dropped,
                     dropped={reason: dropped} if dropped else {}, seconds=round(time.perf_counter() - started, 6))


async def _exact(session: AsyncSession, job_id: uuid.UUID) -> StepStats:
    started = time.perf_counter()
    rows_in = await _kept_count(session, job_id)
    winner = exists().where(DedupSignatureRow.job_id == job_id, DedupSignatureRow.pos == CleanedRowRow.row_index)
    result = await session.execute(
        update(CleanedRowRow)
        .where(CleanedRowRow.job_id == job_id, CleanedRowRow.outcome == "kept", ~winner)
        .values(outcome="dropped", step=DedupFilter.name, reason=DROP_REASON)
        .execution_options(synchronize_session=False)
    )
    await session.execute(delete(DedupSignatureRow).where(DedupSignatureRow.job_id == job_id))
    demoted = int(getattr(result, "rowcount", 0) or 0)  # an UPDATE's result is a CursorResult
    return _stats(DedupFilter.name, DROP_REASON, rows_in, demoted, started)


async def _near_losers(session: AsyncSession, job_id: uuid.UUID, step: NearDedupFilter) -> tuple[int, list[int]]:
    with step.index() as index:  # signatures on disk: a job's rows never all sit in memory
        return await _near_pages(session, job_id, index)


async def _near_pages(session: AsyncSession, job_id: uuid.UUID, index: NearDedupIndex) -> tuple[int, list[int]]:
    losers: list[int] = []
    seen, last = 0, -1
    while True:
        stmt = (select(CleanedRowRow.row_index, CleanedRowRow.data)
                .where(CleanedRowRow.job_id == job_id, CleanedRowRow.outcome == "kept",
                       CleanedRowRow.row_index > last)
                .order_by(CleanedRowRow.row_index).limit(_PAGE))
        page = (await session.execute(stmt)).tuples().all()
        if not page:
            return seen, losers
        seen += len(page)
        losers += [i for i, data in page if not index.admit(data)]
        last = page[-1][0]


async def _near(session: AsyncSession, job_id: uuid.UUID, step: NearDedupFilter) -> StepStats:
    started = time.perf_counter()
    rows_in, losers = await _near_losers(session, job_id, step)
    for i in range(0, len(losers), _PAGE):
        await session.execute(
            update(CleanedRowRow)
            .where(CleanedRowRow.job_id == job_id, CleanedRowRow.row_index.in_(losers[i:i + _PAGE]))
            .values(outcome="dropped", step=NearDedupFilter.name, reason=NEAR_REASON)
            .execution_options(synchronize_session=False)
        )
    return _stats(NearDedupFilter.name, NEAR_REASON, rows_in, len(losers), started)


async def run_dedup(session: AsyncSession, job_id: uuid.UUID, options: DedupOptions) -> list[StepStats]:
    """Run the job's global dedup steps; returns their stats."""
    stats = []
    if options.exact:
        stats.append(await _exact(session, job_id))
    near = options.near_filter()
    if near is not None:
        stats.append(await _near(session, job_id, near))
    return stats
