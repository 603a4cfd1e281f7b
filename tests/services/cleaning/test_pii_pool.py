"""PIIWorkerPool: worker processes give the same rows, in order, as the filter in-process."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from services.cleaning.pii import PIIPresidioFilter
from services.cleaning.pii_pool import PIIWorkerPool, scrub_batch
from shared.errors import ServiceUnavailable


def test_pool_matches_in_process_on_real_rows(real_rows: list[dict[str, Any]]) -> None:
    step = PIIPresidioFilter(record_counts=True)
    rows = real_rows[:60] + [
        {"id": "pii", "messages": [{"role": "user", "content": "手机13800138000 mail jo@corp.io"}]}
    ]
    expected, _ = step(rows)
    with PIIWorkerPool(step, processes=2, batch_size=16) as pool:
        got = list(pool.map(rows))
    assert got == expected
    assert pool.stats.rows == len(rows) and pool.stats.hits == step.stats.hits
    assert pool.stats.hits["CN_PHONE"] >= 1


def test_filter_pickles_without_its_analyzer() -> None:
    step = PIIPresidioFilter()
    _ = step.analyzer
    clone = pickle.loads(pickle.dumps(step))
    assert clone._analyzer is None and clone.strategies == step.strategies


def test_scrub_batch_outside_a_worker_is_a_clear_error() -> None:
    with pytest.raises(ServiceUnavailable):
        scrub_batch([{"messages": []}])
