"""The cleaning service's request-level logic: clean rows now, and describe the steps."""

from __future__ import annotations

import asyncio
from typing import Any

from services.cleaning.base import Row
from services.cleaning.pipeline import DEFAULT_PIPELINE_NAMES
from services.cleaning.preprocessor import CleanResult
from services.cleaning.reasons import DROP_REASONS, DROP_REASONS_VERSION, INVALID_ROW
from services.cleaning.registry import describe_steps
from services.cleaning.runner import (
    PII_STEP,
    DedupOptions,
    build_steps,
    clean_batch,
    global_dedup,
    parse_dedup,
)
from services.cleaning.schemas import (
    CleanCounts,
    CleanRequest,
    CleanResponse,
    DroppedItem,
    FiltersRead,
    StepInfoRead,
    StepStatsRead,
)
from shared.errors import PayloadTooLarge
from shared.settings import Settings

__all__ = ["clean_rows", "list_filters", "to_dropped_item"]

_DROP_KEYS = ("drop_reason", "drop_step", "drop_detail", "drop_evidence")


def to_dropped_item(row: Row) -> DroppedItem:
    """A dropped or invalid row as ``{step, reason, detail, evidence, row}`` with the drop keys moved out of the row."""
    clean = {k: v for k, v in row.items() if k not in _DROP_KEYS}
    if set(clean) == {"value"} and row.get("drop_reason") == INVALID_ROW:
        body: Any = clean["value"]  # a non-object input comes back as it was sent
    else:
        body = clean
    return DroppedItem(step=str(row.get("drop_step")), reason=str(row.get("drop_reason")),
                       detail=row.get("drop_detail"), evidence=row.get("drop_evidence"), row=body)


def _clean_sync(body: CleanRequest, dedup: DedupOptions | None) -> CleanResult:
    result = clean_batch(list(body.rows), build_steps(body.pipeline))
    if dedup is not None:
        kept, dropped, stats = global_dedup(result.kept, dedup)
        result.kept, result.dropped, result.stats = kept, result.dropped + dropped, result.stats + stats
    return result


async def clean_rows(body: CleanRequest, *, settings: Settings) -> CleanResponse:
    """Clean the request's rows with its pipeline (default pipeline if none) and optional dedup."""
    if len(body.rows) > settings.max_rows:
        raise PayloadTooLarge(f"{len(body.rows):,} rows is over the {settings.max_rows:,}-row limit of one "
                              "request; upload a dataset and start a cleaning job instead", param="rows")
    build_steps(body.pipeline)  # bad specs are a 400 before any work starts
    dedup = parse_dedup(body.dedup)
    # The pipeline is CPU-bound; a thread keeps the event loop answering other requests.
    result = await asyncio.to_thread(_clean_sync, body, dedup)
    return CleanResponse(
        kept=result.kept,
        dropped=[to_dropped_item(r) for r in result.dropped],
        invalid=[to_dropped_item(r) for r in result.invalid],
        stats=[StepStatsRead.model_validate(s.model_dump()) for s in result.stats],
        counts=CleanCounts(total=result.total_in, kept=len(result.kept), dropped=len(result.dropped),
                           invalid=len(result.invalid)),
    )


def list_filters() -> FiltersRead:
    """Every step with its parameter schema, the default pipeline and the drop-reason vocabulary."""
    steps = [StepInfoRead.model_validate(s.model_dump()) for s in describe_steps()]
    steps.append(StepInfoRead(name=PII_STEP, description="Rewrite PII in message text; keeps every row.",
                              params_schema={"type": "object", "description": "keyword arguments of the step"}))
    return FiltersRead(steps=steps, default_pipeline=list(DEFAULT_PIPELINE_NAMES),
                       drop_reasons=dict(DROP_REASONS), drop_reasons_version=DROP_REASONS_VERSION)
