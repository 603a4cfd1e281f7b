"""Request and response models of the cleaning service."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["CleanCounts", "CleanJobCreate", "CleanJobRead", "CleanRequest", "CleanResponse", "DatasetRead",
           "DatasetRowRead", "DatasetRowsPage", "DropSummary", "DropSummaryItem", "DroppedItem", "FiltersRead",
           "StepInfoRead", "StepStatsRead"]


class DatasetRead(BaseModel):
    """An uploaded dataset."""

    id: str
    name: str
    row_count: int
    invalid_count: int
    created_at: datetime
    invalid_lines: list[dict[str, Any]] = Field(default_factory=list)


class DatasetRowRead(BaseModel):
    row_index: int
    data: dict[str, Any] | None
    error: str | None = None


class DatasetRowsPage(BaseModel):
    items: list[DatasetRowRead]
    next_offset: int | None = None


class CleanRequest(BaseModel):
    """Rows to clean now, an optional pipeline (default: the default pipeline) and optional global dedup."""

    rows: list[Any] = Field(description="rows in OpenAI chat shape; anything else comes back as invalid_row")
    pipeline: list[dict[str, Any]] | None = Field(default=None, description='[{"name": ..., "params": {...}}]')
    dedup: bool | dict[str, Any] = Field(default=False, description='true, or {"exact": bool, "near": {...}}')


class DroppedItem(BaseModel):
    """A row a step dropped (or could not read), with the step and reason."""

    step: str
    reason: str
    detail: str | None = None
    evidence: dict[str, Any] | None = Field(
        default=None, description="what fired: the check, the matched window, a density, a repeated n-gram, scripts")
    row: Any


class StepStatsRead(BaseModel):
    """What one step did: rows in and out, drops by reason, seconds."""

    step: str
    rows_in: int
    rows_out: int
    dropped: dict[str, int]
    seconds: float


class CleanCounts(BaseModel):
    total: int
    kept: int
    dropped: int
    invalid: int


class CleanResponse(BaseModel):
    """kept + dropped + invalid == total, always."""

    kept: list[dict[str, Any]]
    dropped: list[DroppedItem]
    invalid: list[DroppedItem]
    stats: list[StepStatsRead]
    counts: CleanCounts


class StepInfoRead(BaseModel):
    name: str
    description: str
    params_schema: dict[str, Any]


class FiltersRead(BaseModel):
    """The registered steps, the default pipeline and the versioned drop-reason vocabulary."""

    steps: list[StepInfoRead]
    default_pipeline: list[str]
    drop_reasons: dict[str, str]
    drop_reasons_version: str


class CleanJobCreate(BaseModel):
    """Run a pipeline over an uploaded dataset in batches, then a global dedup phase."""

    dataset_id: uuid.UUID
    pipeline: list[dict[str, Any]] | None = None
    dedup: bool | dict[str, Any] = True
    batch_size: int = Field(default=1000, ge=1, le=50_000)


class CleanJobRead(BaseModel):
    """A cleaning job's status and progress."""

    id: str
    dataset_id: str
    status: str
    total: int
    done: int
    kept: int
    dropped: int
    invalid: int
    batches: int
    batches_done: int
    dedup: dict[str, Any] | None
    stats: list[StepStatsRead]
    error: str | None = None
    created_at: datetime
    updated_at: datetime


class DropSummaryItem(BaseModel):
    step: str | None
    reason: str | None
    count: int


class DropSummary(BaseModel):
    """Dropped and invalid rows of a job counted by step and reason."""

    job_id: str
    items: list[DropSummaryItem]
