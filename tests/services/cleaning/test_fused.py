"""FusedSteps against the step-by-step default pipeline on every row of the shared data folder."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from services.cleaning.fused import FusedSteps, fuse
from services.cleaning.pipeline import default_pipeline
from services.cleaning.preprocessor import QualityPreprocessor
from services.cleaning.refuse import RefuseFilter
from services.cleaning.registry import build_step
from tests.conftest import shared_data_dir

SNAPSHOT = Path(__file__).parent / "data" / "shared_verdicts.json"


def _shared_rows() -> list[dict]:
    rows = []
    for path in sorted(shared_data_dir().glob("*.jsonl")):
        lines = [ln for ln in path.read_bytes().splitlines() if ln.strip()]
        rows += [{**orjson.loads(ln), "_key": f"{path.stem}:{i}"} for i, ln in enumerate(lines)]
    return rows


@pytest.fixture(scope="module")
def results():  # type: ignore[no-untyped-def]
    rows = _shared_rows()
    assert rows, "the shared data folder is missing (set TRAJFORGE_SHARED_DATA_DIR)"
    step_by_step = QualityPreprocessor(default_pipeline())([dict(r) for r in rows])
    fused = QualityPreprocessor(fuse(default_pipeline()))([dict(r) for r in rows])
    return rows, step_by_step, fused


def test_fused_is_identical_to_step_by_step_on_every_shared_row(results) -> None:  # type: ignore[no-untyped-def]
    _, a, b = results
    assert a.kept == b.kept
    assert a.dropped == b.dropped  # same rows, reasons, evidence and order
    strip = [s.model_dump(exclude={"seconds"}) for s in a.stats]
    assert strip == [s.model_dump(exclude={"seconds"}) for s in b.stats]


def test_verdicts_match_the_snapshot_and_the_listed_changes(results) -> None:  # type: ignore[no-untyped-def]
    rows, a, _ = results
    snapshot = orjson.loads(SNAPSHOT.read_bytes())
    got = {r["_key"]: "keep" for r in a.kept} | {r["_key"]: r["drop_reason"] for r in a.dropped + a.invalid}
    want = {f"{stem}:{i}": v for stem, vs in snapshot["verdicts"].items() for i, v in enumerate(vs)}
    assert len(got) == len(rows) == len(want)
    assert {k for k in want if got[k] != want[k]} == set()
    # Every row the fixes changed is listed with its verdict before and after; the after is today's.
    changed = snapshot["changed_by_fixes"]
    assert changed and all(before != after and got[k] == after for k, (before, after) in changed.items())
    kinds = {(before, after) for before, after in changed.values()}
    assert ("agent_min_visible", "keep") in kinds


def test_fuse_groups_only_consecutive_fusable_steps() -> None:
    other = build_step({"name": "ModelFilter", "params": {"patterns": ["gpt-*"]}})
    steps = fuse([*default_pipeline()[:3], other, *default_pipeline()[3:5], RefuseFilter()])
    assert [type(s).__name__ for s in steps] == ["FusedSteps", "ModelFilter", "FusedSteps"]
    assert [s.name for s in steps[2].steps] == ["DeadLoopFilter", "RefuseFilter", "RefuseFilter"]
    assert isinstance(steps[0], FusedSteps) and len(steps[0].steps) == 3
