"""Service-level cleaning: row isolation, stats merging, the SQL signature store, pooled PII, local files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from services.cleaning.base import Row, Step, StepOutput
from services.cleaning.local import clean_jsonl, count_lines
from services.cleaning.pii_jobs import pooled_pii
from services.cleaning.preprocessor import StepStats
from services.cleaning.runner import (
    DedupOptions,
    build_steps,
    clean_batch,
    merge_stats,
    parse_dedup,
)
from services.cleaning.schemas import CleanRequest
from services.cleaning.service import clean_rows, list_filters
from services.cleaning.sql_signature_store import SqlSignatureStore
from shared.db.models import CleaningJobRow, DatasetRow
from shared.errors import InvalidInput, PayloadTooLarge
from shared.settings import Settings


class _ExplodesOnBoom(Step):
    """A step with a bug on one kind of row (a real step, not a mock)."""

    def process(self, rows: list[Row]) -> StepOutput:
        if any("boom" in r for r in rows):
            raise RuntimeError("cannot handle boom")
        return rows, []


def test_a_step_that_raises_costs_only_the_offending_row(real_rows: list[dict[str, Any]]) -> None:
    rows = real_rows[:10] + [{**real_rows[0], "boom": True}] + real_rows[10:15]
    result = clean_batch(rows, [*build_steps(None)[:2], _ExplodesOnBoom()])
    assert len(result.kept) + len(result.dropped) + len(result.invalid) == len(rows)
    assert len(result.invalid) == 1
    assert result.invalid[0]["boom"] is True and "cannot handle boom" in result.invalid[0]["drop_detail"]
    # Stats count the rows each step saw; the row that made a step raise has none.
    assert sum(s.rows_in for s in result.stats if s.step == "MessageNormalizer") == len(rows) - 1


def test_merge_stats_sums_by_step_in_order() -> None:
    a = [StepStats(step="A", rows_in=5, rows_out=4, dropped={"x": 1}, seconds=0.5)]
    b = [StepStats(step="A", rows_in=3, rows_out=1, dropped={"x": 1, "y": 1}, seconds=0.25),
         StepStats(step="B", rows_in=1, rows_out=1, dropped={}, seconds=0.0)]
    merged = merge_stats(a, b)
    assert [(s.step, s.rows_in, s.rows_out, s.dropped) for s in merged] == [
        ("A", 8, 5, {"x": 2, "y": 1}), ("B", 1, 1, {})]
    assert a[0].rows_in == 5  # inputs are not modified


def test_dedup_option_parsing() -> None:
    assert parse_dedup(False) is None and parse_dedup(True) == DedupOptions()
    assert parse_dedup({"near": {"threshold": 0.9}}) == DedupOptions(exact=True, near={"threshold": 0.9})
    with pytest.raises(InvalidInput):
        parse_dedup({"exact": "maybe"})


async def test_clean_rows_limit_and_counts(real_rows: list[dict[str, Any]]) -> None:
    settings = Settings(max_rows=50)
    with pytest.raises(PayloadTooLarge):
        await clean_rows(CleanRequest(rows=real_rows[:51]), settings=settings)
    out = await clean_rows(CleanRequest(rows=real_rows[:40] + real_rows[:10], dedup=True), settings=settings)
    assert out.counts.kept + out.counts.dropped + out.counts.invalid == out.counts.total == 50
    assert sum(d.reason == "duplicate" for d in out.dropped) >= 10


def test_list_filters_has_every_registered_step() -> None:
    filters = list_filters()
    assert len({s.name for s in filters.steps}) == len(filters.steps) >= 10
    assert set(filters.default_pipeline) <= {s.name for s in filters.steps}


async def test_sql_signature_store_keeps_longest_then_first(session: AsyncSession) -> None:
    dataset = DatasetRow(name="sig")
    session.add(dataset)
    await session.flush()
    job = CleaningJobRow(dataset_id=dataset.id)
    session.add(job)
    await session.flush()
    store = SqlSignatureStore(session, job.id)
    a, b, c = b"a" * 16, b"b" * 16, b"c" * 16
    await store.add([(a, 2, 7), (a, 4, 9), (b, 3, 5)])  # the same signature twice in one batch
    await store.add([(a, 4, 3), (b, 3, 8), (c, 1, 1)])  # a tie goes to the lower position
    await store.add([(a, 4, 3), (b, 3, 8), (c, 1, 1)])  # re-adding a batch changes nothing
    assert await store.winners() == {3, 5, 1}
    await store.add([])
    assert await SqlSignatureStore(session, dataset.id).winners() == set()


def test_pooled_pii_step_runs_in_worker_processes_and_reports_stats() -> None:
    steps = pooled_pii(build_steps([{"name": "MessageNormalizer"}, {"name": "PIIPresidioFilter"}]), processes=2)
    assert type(steps[1]).__name__ == "PooledStep"
    rows = [{"id": i, "messages": [{"role": "user", "content": f"mail me at user{i}@corp.io or call 1380013800{i}"},
                                   {"role": "assistant", "content": "Sure, I will write to you soon."}]}
            for i in range(5)]
    result = clean_batch(rows, steps)
    assert [r["id"] for r in result.kept] == list(range(5))
    assert all("@corp.io" not in r["messages"][0]["content"] for r in result.kept)
    assert all("138****" in r["messages"][0]["content"] for r in result.kept)
    assert result.stats[1].step == "PIIPresidioFilter" and result.stats[1].rows_out == 5
    assert pooled_pii(steps, processes=1) == steps


def test_clean_jsonl_streams_batches_and_dedups(tmp_path: Path, real_rows: list[dict[str, Any]]) -> None:
    src = tmp_path / "in.jsonl"
    rows = real_rows[:50] + real_rows[:5]
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows) + b"not json\n")
    seen: list[int] = []
    summary = clean_jsonl(src, tmp_path / "k.jsonl", tmp_path / "d.jsonl", steps=build_steps(None),
                          dedup=DedupOptions(), batch_size=8, progress=seen.append)
    kept = (tmp_path / "k.jsonl").read_bytes().splitlines()
    dropped = (tmp_path / "d.jsonl").read_bytes().splitlines()
    assert summary.total == 56 == len(kept) + len(dropped) and summary.kept == len(kept)
    assert summary.invalid == 1 and summary.stats[-1].step == "DedupFilter"
    assert summary.stats[-1].dropped["duplicate"] >= 5
    assert len(seen) == 7 and count_lines(src) == 56
