"""Cleaning a JSONL file locally (no server): streamed in batches, then a two-pass global dedup.

Memory stays flat in the input size: batches are cleaned and written as they
are read; the dedup spills signatures to an SQLite file in a temp folder and
reads the kept rows twice. Every input line ends up in exactly one of the two
outputs: kept rows in ``kept``, dropped and unreadable ones in ``dropped``
with ``drop_step``, ``drop_reason`` (and ``drop_detail`` for unreadable rows).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from services.cleaning.base import Row, Step
from services.cleaning.dedup import DedupFilter, stream_dedup
from services.cleaning.near_dedup import DROP_REASON as NEAR_REASON
from services.cleaning.near_dedup import NearDedupFilter
from services.cleaning.preprocessor import StepStats
from services.cleaning.reasons import INVALID_ROW
from services.cleaning.rows import INPUT_STEP
from services.cleaning.runner import DedupOptions, clean_batch, merge_stats, step_stats
from services.cleaning.signature_store import SqliteSignatureStore
from shared.jsonl import JsonlRecord, dumps_line, iter_jsonl_path

__all__ = ["LocalSummary", "clean_jsonl", "count_lines"]

Progress = Callable[[int], None]


@dataclass
class LocalSummary:
    """What a local run did: per-step stats and the final counts."""

    stats: list[StepStats] = field(default_factory=list)
    total: int = 0
    kept: int = 0
    dropped: int = 0
    invalid: int = 0


def count_lines(path: Path) -> int:
    """Lines in a file, counted in 1 MiB chunks (for the progress bar's total)."""
    n, last = 0, b"\n"
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def _unreadable(record: JsonlRecord) -> Row:
    return {"line": record.line_no, "raw": record.raw.decode("utf-8", "replace"), "drop_reason": INVALID_ROW,
            "drop_step": INPUT_STEP, "drop_detail": record.error}


def _batches(path: Path, size: int, max_line_bytes: int) -> Iterator[tuple[list[Any], list[Row], int]]:
    values: list[Any] = []
    bad: list[Row] = []
    for record in iter_jsonl_path(path, max_line_bytes=max_line_bytes):
        if record.ok:
            values.append(record.value)
        else:
            bad.append(_unreadable(record))
        if len(values) + len(bad) >= size:
            yield values, bad, record.line_no
            values, bad = [], []
    if values or bad:
        yield values, bad, -1


def _write(fh: IO[bytes], rows: list[Row]) -> None:
    fh.write(b"".join(dumps_line(r) for r in rows))


def _read_rows(path: Path) -> Iterator[Row]:
    for record in iter_jsonl_path(path):
        yield record.value


def _pass_one(src: Path, steps: list[Step], kept_fh: IO[bytes], dropped_fh: IO[bytes], summary: LocalSummary,
              *, batch_size: int, max_line_bytes: int, progress: Progress) -> None:
    for values, bad, line_no in _batches(src, batch_size, max_line_bytes):
        result = clean_batch(values, steps)
        _write(kept_fh, result.kept)
        _write(dropped_fh, bad + result.invalid + result.dropped)
        summary.stats = merge_stats(summary.stats, result.stats)
        summary.total += len(values) + len(bad)
        summary.kept += len(result.kept)
        summary.dropped += len(result.dropped)
        summary.invalid += len(result.invalid) + len(bad)
        progress(line_no)


def _dedup(rows_path: Path, tmp: Path, options: DedupOptions) -> Iterator[tuple[bool, Row]]:
    rows: Iterator[tuple[bool, Row]] = ((True, r) for r in _read_rows(rows_path))
    store = SqliteSignatureStore(tmp / "signatures.db")
    index = None
    try:
        if options.exact:
            rows = stream_dedup(lambda: _read_rows(rows_path), store)
        near = options.near_filter()
        # MinHash signatures go to a SQLite file beside the exact-dedup one, not to memory.
        index = near.index(tmp / "near.sqlite") if near is not None else None
        for keep, row in rows:
            if keep and index is not None and not index.admit(row):
                keep, row = False, near.drop(row, NEAR_REASON, {  # type: ignore[union-attr]
                    "check": "near_duplicate", "threshold": near.threshold,  # type: ignore[union-attr]
                    "jaccard": index.last_jaccard})
            yield keep, row
    finally:
        store.close()
        if index is not None:
            index.close()


def _pass_two(rows_path: Path, tmp: Path, options: DedupOptions, kept_fh: IO[bytes], dropped_fh: IO[bytes],
              summary: LocalSummary) -> None:
    started = time.perf_counter()
    rows_in = summary.kept
    dropped: list[Row] = []
    for keep, row in _dedup(rows_path, tmp, options):
        if keep:
            kept_fh.write(dumps_line(row))
        else:
            dropped_fh.write(dumps_line(row))
            dropped.append({"drop_step": row["drop_step"], "drop_reason": row["drop_reason"]})
    seconds = time.perf_counter() - started
    names = [DedupFilter.name] if options.exact else []
    names += [NearDedupFilter.name] if options.near is not None else []
    for name in names:
        mine = [d for d in dropped if d["drop_step"] == name]
        summary.stats.append(step_stats(name, rows_in, mine, seconds / len(names)))
        rows_in -= len(mine)
    summary.kept -= len(dropped)
    summary.dropped += len(dropped)


def clean_jsonl(src: Path, kept: Path, dropped: Path, *, steps: list[Step], dedup: DedupOptions | None,
                batch_size: int = 2000, max_line_bytes: int = 32 * 1024 * 1024,
                progress: Progress = lambda _line: None) -> LocalSummary:
    """Clean ``src`` into ``kept`` and ``dropped``; returns the per-step stats and counts."""
    summary = LocalSummary()
    with tempfile.TemporaryDirectory(prefix="trajforge-clean-") as tmp_dir, open(dropped, "wb") as dropped_fh:
        tmp = Path(tmp_dir)
        stage = tmp / "kept.jsonl" if dedup is not None else kept
        with open(stage, "wb") as stage_fh:
            _pass_one(src, steps, stage_fh, dropped_fh, summary, batch_size=batch_size,
                      max_line_bytes=max_line_bytes, progress=progress)
        if dedup is not None:
            with open(kept, "wb") as kept_fh:
                _pass_two(stage, tmp, dedup, kept_fh, dropped_fh, summary)
    return summary
