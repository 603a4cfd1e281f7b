"""Request and response models of the cleaning service."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["DatasetRead", "DatasetRowRead", "DatasetRowsPage"]


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
