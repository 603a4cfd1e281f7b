"""Pipelines from specs and safe batch cleaning, shared by the REST service, dataset jobs and the CLI.

A step that raises on a batch does not fail the batch: the batch is cleaned
again row by row and only the rows that still make a step raise become
``invalid_row`` entries with the error as their cause, so
``kept + dropped + invalid == input`` holds whatever the data holds.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from services.cleaning.base import Row, Step, StepOutput
from services.cleaning.dedup import DedupFilter
from services.cleaning.fused import fuse
from services.cleaning.near_dedup import NearDedupFilter
from services.cleaning.pipeline import DEFAULT_PIPELINE_NAMES
from services.cleaning.preprocessor import CleanResult, QualityPreprocessor, StepStats
from services.cleaning.registry import StepSpec, build_step
from services.cleaning.rows import invalid_row
from shared.errors import InvalidInput

__all__ = [
    "PII_STEP",
    "DedupOptions",
    "PooledStep",
    "build_steps",
    "clean_batch",
    "global_dedup",
    "merge_stats",
    "parse_dedup",
    "parse_specs",
    "step_stats",
]

log = logging.getLogger("trajforge.cleaning")

#: The PII step is built here rather than in the registry: it is optional (Presidio) and may run pooled.
PII_STEP = "PIIPresidioFilter"


class DedupOptions(BaseModel):
    """Global dedup after the pipeline: exact (signature, longest wins) and optional near-duplicate."""

    exact: bool = True
    near: dict[str, Any] | None = Field(default=None, description="NearDedupFilter parameters; null = off")

    def near_filter(self) -> NearDedupFilter | None:
        """The configured near-duplicate step, or None."""
        if self.near is None:
            return None
        try:
            return NearDedupFilter(**self.near)
        except TypeError as exc:
            raise InvalidInput(f"Bad near-dedup parameters: {exc}.", param="dedup.near") from None


def parse_dedup(value: bool | dict[str, Any] | DedupOptions | None) -> DedupOptions | None:
    """``True``/``{"near": {...}}``/``{"exact": false, "near": {...}}`` -> options; falsy -> None."""
    if not value:
        return None
    if isinstance(value, DedupOptions):
        return value
    if value is True:
        return DedupOptions()
    try:
        return DedupOptions.model_validate(value)
    except ValidationError as exc:
        raise InvalidInput(f"Bad dedup option: {exc.errors(include_url=False)[0]['msg']}.", param="dedup") from None


def parse_specs(specs: Sequence[Any] | None) -> list[StepSpec]:
    """Step specs validated (InvalidInput on a bad one); None means the default pipeline."""
    if specs is None:
        return [StepSpec(name=name) for name in DEFAULT_PIPELINE_NAMES]
    out = []
    for i, spec in enumerate(specs):
        try:
            out.append(spec if isinstance(spec, StepSpec) else StepSpec.model_validate(spec))
        except ValidationError as exc:
            msg = exc.errors(include_url=False)[0]["msg"]
            raise InvalidInput(f"Bad step spec at pipeline[{i}]: {msg}.", param="pipeline") from None
    return out


def _build_pii(params: dict[str, Any]) -> Step:
    from services.cleaning.pii import PIIPresidioFilter

    try:
        return PIIPresidioFilter(**params)
    except TypeError as exc:
        raise InvalidInput(f"Bad parameters for {PII_STEP}: {exc}.", param=PII_STEP) from None


def build_steps(specs: Sequence[Any] | None, *, fused: bool = False) -> list[Step]:
    """Steps from specs (registry names plus the PII step); None means the default pipeline.

    ``fused``: consecutive default-pipeline steps run as one pass (``FusedSteps``): the same
    verdicts, evidence and per-step stats. Off by default: on the shared data it runs the same
    functions the same number of times and is no faster in CPU time (on a busy host up to a
    quarter slower: every row goes through every step's code and tables in turn instead of one
    step over a whole batch); bench/cleaning.py prints both.
    """
    steps = [_build_pii(s.params) if s.name == PII_STEP else build_step(s) for s in parse_specs(specs)]
    return fuse(steps) if fused else steps


class PooledStep(Step):
    """Runs a row-rewriting step (PII) through a worker pool's ``map``; keeps every row."""

    def __init__(self, name: str, pool: Any) -> None:
        self.name = name  # type: ignore[misc]
        self._pool = pool

    def process(self, rows: list[Row]) -> StepOutput:
        """Rewritten rows in input order."""
        return list(self._pool.map(rows)), []


def merge_stats(total: list[StepStats], part: Iterable[StepStats]) -> list[StepStats]:
    """Per-step stats summed by step name, in first-seen order."""
    by_name = {s.step: s.model_copy(deep=True) for s in total}
    for s in part:
        cur = by_name.get(s.step)
        if cur is None:
            by_name[s.step] = s.model_copy(deep=True)
            continue
        cur.rows_in += s.rows_in
        cur.rows_out += s.rows_out
        cur.seconds = round(cur.seconds + s.seconds, 6)
        for reason, n in s.dropped.items():
            cur.dropped[reason] = cur.dropped.get(reason, 0) + n
    return list(by_name.values())


def clean_batch(values: list[Any], steps: Sequence[Step]) -> CleanResult:
    """Clean one batch; if a step raises, isolate the offending rows instead of failing the batch."""
    try:
        return QualityPreprocessor(steps)(values)
    except Exception as exc:  # noqa: BLE001  (a step bug on odd data must not lose the batch)
        log.warning("cleaning step raised on a batch; retrying row by row", extra={"error": repr(exc)})
    return _clean_row_by_row(values, steps)


def _clean_row_by_row(values: list[Any], steps: Sequence[Step]) -> CleanResult:
    kept: list[Row] = []
    dropped: list[Row] = []
    invalid: list[Row] = []
    stats: list[StepStats] = []
    for value in values:
        try:
            one = QualityPreprocessor(steps)([value])
        except Exception as exc:  # noqa: BLE001  (the row becomes data, not a crash)
            invalid.append(invalid_row(value, f"a cleaning step failed on this row: {type(exc).__name__}: {exc}"))
            continue
        kept += one.kept
        dropped += one.dropped
        invalid += one.invalid
        stats = merge_stats(stats, one.stats)
    return CleanResult.model_construct(kept=kept, dropped=dropped, invalid=invalid, stats=stats,
                                       total_in=len(values))


def global_dedup(rows: list[Row], options: DedupOptions) -> tuple[list[Row], list[Row], list[StepStats]]:
    """In-memory global dedup of kept rows: (kept, dropped, stats of each dedup step)."""
    steps: list[Step] = [DedupFilter()] if options.exact else []
    near = options.near_filter()
    if near is not None:
        steps.append(near)
    dropped: list[Row] = []
    stats: list[StepStats] = []
    for step in steps:
        started = time.perf_counter()
        kept, step_dropped = step(rows)
        stats.append(step_stats(step.name, len(rows), step_dropped, time.perf_counter() - started))
        dropped += step_dropped
        rows = kept
    return rows, dropped, stats


def step_stats(step: str, rows_in: int, dropped: Sequence[Row], seconds: float) -> StepStats:
    """Stats of one step from its input size and dropped rows."""
    reasons = Counter(str(r.get("drop_reason")) for r in dropped)
    return StepStats(step=step, rows_in=rows_in, rows_out=rows_in - len(dropped), dropped=dict(reasons),
                     seconds=round(seconds, 6))
