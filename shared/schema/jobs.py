"""Job status models shared by the cleaning, rollout and reward services."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = ["JobProgress", "JobStatus", "Page"]

JobStatus = Literal["pending", "running", "succeeded", "failed", "cancelled"]


class JobProgress(BaseModel):
    """Progress of a long-running job."""

    id: str
    kind: str
    status: JobStatus
    total: int = 0
    done: int = 0
    failed: int = 0
    counts: dict[str, int] = Field(default_factory=dict)
    error: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


class Page(BaseModel):
    """A page of results with an opaque cursor for the next one."""

    items: list[Any]
    next_cursor: str | None = None
    total: int | None = None
