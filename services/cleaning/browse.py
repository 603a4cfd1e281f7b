"""Read-only views of cleaning jobs for people (the console) and scripts.

The job list, and dropped rows as paginated JSON (filtered by step and reason,
each with its row index and the evidence the step recorded), plus one row's
outcome by index. The JSONL streams in ``routes.py`` stay the bulk export.
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from services.cleaning import jobs
from services.cleaning.schemas import CleanJobRead
from shared.db.models import CleanedRowRow, CleaningJobRow, DatasetRow
from shared.errors import NotFound

__all__ = ["CleanJobPage", "CleanedRowPage", "CleanedRowRead", "list_jobs", "read_row", "read_rows"]

#: Keys of a dropped row that are the cleaning step's bookkeeping, not the row itself.
_DROP_KEYS = ("drop_step", "drop_reason")


class CleanJobPage(BaseModel):
    """A page of cleaning jobs, newest first, each with its dataset's name."""

    items: list[CleanJobRead]
    dataset_names: dict[str, str] = Field(default_factory=dict)
    next_offset: int | None = None


class CleanedRowRead(BaseModel):
    """One input row's outcome: kept, or dropped/invalid with step, reason and evidence."""

    row_index: int
    outcome: str
    step: str | None = None
    reason: str | None = None
    #: What the step recorded about the drop (``drop_detail`` and any other ``drop_*`` field).
    evidence: dict[str, Any] = Field(default_factory=dict)
    row: Any = None


class CleanedRowPage(BaseModel):
    """A page of a job's rows in input order."""

    items: list[CleanedRowRead]
    next_offset: int | None = None


async def list_jobs(session: AsyncSession, *, offset: int, limit: int, status: str | None = None) -> CleanJobPage:
    """A page of cleaning jobs, newest first."""
    stmt = select(CleaningJobRow)
    if status is not None:
        stmt = stmt.where(CleaningJobRow.status == status)
    stmt = stmt.order_by(CleaningJobRow.created_at.desc(), CleaningJobRow.id).offset(offset).limit(limit)
    rows = list((await session.scalars(stmt)).all())
    ids = {r.dataset_id for r in rows}
    names = dict((await session.execute(select(DatasetRow.id, DatasetRow.name).where(DatasetRow.id.in_(ids))))
                 .tuples().all()) if ids else {}
    return CleanJobPage(items=[jobs.job_read(r) for r in rows], dataset_names={str(k): v for k, v in names.items()},
                        next_offset=offset + len(rows) if len(rows) == limit else None)


def _read(row: CleanedRowRow) -> CleanedRowRead:
    data = row.data if isinstance(row.data, dict) else {"value": row.data}
    evidence = {k: v for k, v in data.items() if k.startswith("drop_") and k not in _DROP_KEYS}
    body = {k: v for k, v in data.items() if not k.startswith("drop_")}
    return CleanedRowRead(row_index=row.row_index, outcome=row.outcome, step=row.step, reason=row.reason,
                          evidence=evidence, row=body)


async def read_rows(session: AsyncSession, job_id: uuid.UUID, *, outcome: str | None, step: str | None,
                    reason: str | None, offset: int, limit: int) -> CleanedRowPage:
    """A page of the job's rows of one outcome (``dropped`` covers invalid rows too), step and reason."""
    await jobs.get_job(session, job_id)
    stmt = select(CleanedRowRow).where(CleanedRowRow.job_id == job_id)
    if outcome == "dropped":
        stmt = stmt.where(CleanedRowRow.outcome.in_(("dropped", "invalid")))
    elif outcome is not None:
        stmt = stmt.where(CleanedRowRow.outcome == outcome)
    if step is not None:
        stmt = stmt.where(CleanedRowRow.step == step)
    if reason is not None:
        stmt = stmt.where(CleanedRowRow.reason == reason)
    stmt = stmt.order_by(CleanedRowRow.row_index).offset(offset).limit(limit)
    items = [_read(r) for r in (await session.scalars(stmt)).all()]
    return CleanedRowPage(items=items, next_offset=offset + len(items) if len(items) == limit else None)


async def read_row(session: AsyncSession, job_id: uuid.UUID, row_index: int) -> CleanedRowRead:
    """One input row's outcome, by its index in the dataset."""
    await jobs.get_job(session, job_id)
    row = (await session.execute(select(CleanedRowRow).where(CleanedRowRow.job_id == job_id,
                                                             CleanedRowRow.row_index == row_index))).scalar()
    if row is None:
        raise NotFound(f"cleaning job {job_id} has no outcome for row {row_index}", param="row_index")
    return _read(row)
