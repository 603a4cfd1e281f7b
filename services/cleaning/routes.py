"""HTTP routes of the cleaning service (thin: parse, call the service, return a schema)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from services.cleaning import datasets, jobs, service
from services.cleaning.schemas import (
    CleanJobCreate,
    CleanJobRead,
    CleanRequest,
    CleanResponse,
    DatasetRead,
    DatasetRowRead,
    DatasetRowsPage,
    DropSummary,
    FiltersRead,
)
from shared.web import DispatcherDep, SessionDep, SettingsDep, StateDep

__all__ = ["router"]

router = APIRouter(tags=["cleaning"])
_JSONL = "application/x-ndjson"


#: The upload is the raw JSONL body; declared so clients (and the schema) know what to send.
_JSONL_BODY = {"requestBody": {"required": True, "description": "JSONL: one JSON row per line; unreadable lines "
                               "are stored with their error.",
                               "content": {"application/x-ndjson": {"schema": {"type": "string", "format": "binary"}}}}}


@router.post("/v1/datasets", status_code=201, response_model=DatasetRead, openapi_extra=_JSONL_BODY)
async def create_dataset(
    request: Request, session: SessionDep, settings: SettingsDep,
    name: Annotated[str, Query(min_length=1, max_length=300, pattern=r"\S")],
) -> DatasetRead:
    """Upload a JSONL dataset (the request body); unreadable lines are kept with their error."""
    body = await request.body()
    dataset, invalid = await datasets.store_dataset(
        session, name=name, source=body, max_line_bytes=settings.max_row_bytes
    )
    return DatasetRead(
        id=str(dataset.id), name=dataset.name, row_count=dataset.row_count,
        invalid_count=dataset.invalid_count, created_at=dataset.created_at, invalid_lines=invalid[:100],
    )


@router.get("/v1/datasets/{dataset_id}", response_model=DatasetRead)
async def read_dataset(dataset_id: uuid.UUID, session: SessionDep) -> DatasetRead:
    """One dataset's metadata."""
    d = await datasets.get_dataset(session, dataset_id)
    return DatasetRead(id=str(d.id), name=d.name, row_count=d.row_count,
                       invalid_count=d.invalid_count, created_at=d.created_at)


@router.get("/v1/datasets/{dataset_id}/rows", response_model=DatasetRowsPage)
async def read_dataset_rows(
    dataset_id: uuid.UUID,
    session: SessionDep,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> DatasetRowsPage:
    """A page of a dataset's rows in upload order."""
    rows = await datasets.read_rows(session, dataset_id, offset=offset, limit=limit)
    items = [DatasetRowRead(row_index=r.row_index, data=r.data, error=r.error) for r in rows]
    next_offset = offset + len(items) if len(items) == limit else None
    return DatasetRowsPage(items=items, next_offset=next_offset)


@router.post("/v1/clean", response_model=CleanResponse)
async def clean(body: CleanRequest, settings: SettingsDep) -> CleanResponse:
    """Clean rows now: kept, dropped (step, reason, row), invalid rows and per-step stats."""
    return await service.clean_rows(body, settings=settings)


@router.get("/v1/filters", response_model=FiltersRead)
async def list_filters() -> FiltersRead:
    """The cleaning steps with their parameter schemas, and the versioned drop reasons."""
    return service.list_filters()


@router.post("/v1/clean/jobs", status_code=202, response_model=CleanJobRead)
async def create_clean_job(body: CleanJobCreate, session: SessionDep, dispatcher: DispatcherDep) -> CleanJobRead:
    """Start a cleaning job over an uploaded dataset (batches as queue tasks, then global dedup)."""
    return jobs.job_read(await jobs.create_job(session, dispatcher, body))


@router.get("/v1/clean/jobs/{job_id}", response_model=CleanJobRead)
async def read_clean_job(job_id: uuid.UUID, session: SessionDep) -> CleanJobRead:
    """A cleaning job's status, progress counts and per-step stats."""
    return jobs.job_read(await jobs.get_job(session, job_id))


@router.get("/v1/clean/jobs/{job_id}/kept", response_class=StreamingResponse)
async def read_kept_rows(job_id: uuid.UUID, session: SessionDep, state: StateDep) -> StreamingResponse:
    """The job's kept rows as JSONL, in input order."""
    await jobs.get_job(session, job_id)
    return StreamingResponse(jobs.stream_rows(state.sessionmaker, job_id, kept=True), media_type=_JSONL)


@router.get("/v1/clean/jobs/{job_id}/dropped", response_class=StreamingResponse)
async def read_dropped_rows(
    job_id: uuid.UUID, session: SessionDep, state: StateDep, reason: Annotated[str | None, Query()] = None
) -> StreamingResponse:
    """The job's dropped and invalid rows as JSONL with drop_step and drop_reason (``?reason=`` filters)."""
    await jobs.get_job(session, job_id)
    stream = jobs.stream_rows(state.sessionmaker, job_id, kept=False, reason=reason)
    return StreamingResponse(stream, media_type=_JSONL)


@router.get("/v1/clean/jobs/{job_id}/dropped/summary", response_model=DropSummary)
async def read_drop_summary(job_id: uuid.UUID, session: SessionDep) -> DropSummary:
    """Dropped and invalid rows of a job counted by step and reason."""
    return await jobs.drop_summary(session, job_id)
