"""Read-only REST views of cleaning jobs: the job list, rows by outcome, step and reason, one row."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query

from services.cleaning import browse
from services.cleaning.browse import CleanedRowPage, CleanedRowRead, CleanJobPage
from shared.web import SessionDep

__all__ = ["browse_router"]

browse_router = APIRouter(tags=["cleaning"])
Offset = Annotated[int, Query(ge=0)]
Limit = Annotated[int, Query(ge=1, le=500)]


@browse_router.get("/v1/clean/jobs", response_model=CleanJobPage)
async def list_clean_jobs(session: SessionDep, offset: Offset = 0, limit: Limit = 50,
                          status: Annotated[str | None, Query(max_length=20)] = None) -> CleanJobPage:
    """A page of cleaning jobs, newest first."""
    return await browse.list_jobs(session, offset=offset, limit=limit, status=status)


@browse_router.get("/v1/clean/jobs/{job_id}/rows", response_model=CleanedRowPage)
async def read_clean_rows(
    job_id: uuid.UUID,
    session: SessionDep,
    outcome: Annotated[Literal["kept", "dropped", "invalid"] | None, Query()] = None,
    step: Annotated[str | None, Query(max_length=100)] = None,
    reason: Annotated[str | None, Query(max_length=200)] = None,
    offset: Offset = 0,
    limit: Limit = 50,
) -> CleanedRowPage:
    """A page of the job's rows in input order, by outcome, step and reason, with each drop's evidence."""
    return await browse.read_rows(session, job_id, outcome=outcome, step=step, reason=reason, offset=offset,
                                  limit=limit)


@browse_router.get("/v1/clean/jobs/{job_id}/rows/{row_index}", response_model=CleanedRowRead)
async def read_clean_row(job_id: uuid.UUID, row_index: Annotated[int, Path(ge=0)],
                         session: SessionDep) -> CleanedRowRead:
    """One input row's outcome: kept, or the step, reason and evidence of its drop."""
    return await browse.read_row(session, job_id, row_index)
