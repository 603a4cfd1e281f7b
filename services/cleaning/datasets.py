"""Datasets: JSONL uploads stored row by row, bad lines kept with their error."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from shared.db.models import DatasetRow, DatasetRowRow
from shared.errors import InvalidInput, NotFound
from shared.jsonl import iter_jsonl

__all__ = ["get_dataset", "read_rows", "store_dataset"]

_BATCH = 1000


def _row_values(dataset_id: uuid.UUID, index: int, value: Any, error: str | None) -> dict[str, Any]:
    if error is None and not isinstance(value, dict):
        value, error = None, f"a row must be a JSON object, got {type(value).__name__}"
    return {"dataset_id": dataset_id, "row_index": index, "data": value, "error": error}


async def store_dataset(
    session: AsyncSession, *, name: str, source: bytes | Iterable[bytes], max_line_bytes: int
) -> tuple[DatasetRow, list[dict[str, Any]]]:
    """Store every line of a JSONL source; returns the dataset and its invalid lines."""
    if not name.strip():
        raise InvalidInput("dataset name must not be empty", param="name")
    dataset = DatasetRow(name=name.strip())
    session.add(dataset)
    await session.flush()
    batch: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    count = 0
    for record in iter_jsonl(source, max_line_bytes=max_line_bytes):
        values = _row_values(dataset.id, count, record.value, record.error)
        if values["error"]:
            invalid.append({"row_index": count, "line": record.line_no, "error": values["error"]})
        batch.append(values)
        count += 1
        if len(batch) >= _BATCH:
            await _insert(session, batch)
            batch = []
    await _insert(session, batch)
    if count == 0:
        raise InvalidInput("the upload holds no JSONL rows (empty file or only blank lines)")
    dataset.row_count, dataset.invalid_count = count, len(invalid)
    await session.flush()
    return dataset, invalid


async def _insert(session: AsyncSession, batch: list[dict[str, Any]]) -> None:
    if batch:
        session.add_all([DatasetRowRow(**values) for values in batch])
        await session.flush()


async def get_dataset(session: AsyncSession, dataset_id: uuid.UUID) -> DatasetRow:
    """The dataset, or a 404."""
    dataset = await session.get(DatasetRow, dataset_id)
    if dataset is None:
        raise NotFound(f"no dataset with id {dataset_id}")
    return dataset


async def read_rows(
    session: AsyncSession, dataset_id: uuid.UUID, *, offset: int, limit: int
) -> list[DatasetRowRow]:
    """A slice of a dataset's rows in upload order."""
    await get_dataset(session, dataset_id)
    stmt = (
        select(DatasetRowRow)
        .where(DatasetRowRow.dataset_id == dataset_id, DatasetRowRow.row_index >= offset)
        .order_by(DatasetRowRow.row_index)
        .limit(limit)
    )
    return list((await session.execute(stmt)).scalars())
