"""Prefix-mismatch and zero-capture metrics, counted once per session."""

from __future__ import annotations

from prometheus_client import REGISTRY

from services.gateway.metrics import record_merge
from shared.traces import PrefixMismatch, SessionMerge


def value(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


def test_counts_only_what_is_new_for_a_session() -> None:
    checks0 = value("trajforge_gateway_prefix_checks_total")
    other0 = value("trajforge_gateway_prefix_mismatches_total", {"cause": "other"})
    mismatch = PrefixMismatch(sequence=2, previous_sequence=1, position=4, cause="other")
    merge = SessionMerge(session_id="metrics-1", calls=3, captured_calls=3, joins=1, mismatches=[mismatch])
    record_merge(merge)
    record_merge(merge)
    assert value("trajforge_gateway_prefix_checks_total") == checks0 + 2
    assert value("trajforge_gateway_prefix_mismatches_total", {"cause": "other"}) == other0 + 1
    grown = merge.model_copy(update={"calls": 4, "captured_calls": 4, "joins": 2})
    record_merge(grown)
    assert value("trajforge_gateway_prefix_checks_total") == checks0 + 3
    assert value("trajforge_gateway_prefix_mismatches_total", {"cause": "other"}) == other0 + 1
    assert 0 < value("trajforge_gateway_prefix_mismatch_ratio") <= 1


def test_zero_capture_session_counted_once() -> None:
    before = value("trajforge_gateway_zero_capture_sessions_total")
    empty = SessionMerge(session_id="metrics-zero", calls=2, captured_calls=0)
    record_merge(empty)
    record_merge(empty.model_copy(update={"calls": 3}))
    assert value("trajforge_gateway_zero_capture_sessions_total") == before + 1
