"""Prometheus metrics of the gateway (module-level, registered once per process)."""

from __future__ import annotations

from collections import OrderedDict

from prometheus_client import Counter, Gauge

from shared.traces import SessionMerge

__all__ = [
    "PREFIX_CHECKS",
    "PREFIX_MISMATCHES",
    "PREFIX_MISMATCH_RATIO",
    "ZERO_CAPTURE_SESSIONS",
    "record_merge",
]

PREFIX_CHECKS = Counter(
    "trajforge_gateway_prefix_checks_total", "Consecutive-call pairs checked for a token prefix."
)
PREFIX_MISMATCHES = Counter(
    "trajforge_gateway_prefix_mismatches_total",
    "Calls whose prompt did not extend the previous prompt + completion.",
    ["cause"],
)
PREFIX_MISMATCH_RATIO = Gauge(
    "trajforge_gateway_prefix_mismatch_ratio", "Prefix mismatches / prefix checks since start."
)
ZERO_CAPTURE_SESSIONS = Counter(
    "trajforge_gateway_zero_capture_sessions_total",
    "Merged sessions in which no call carried engine token ids.",
)

_totals = {"checks": 0, "mismatches": 0}
# A session merged again (say after more calls) adds only what is new since last time.
_seen: OrderedDict[str, tuple[int, int, bool]] = OrderedDict()
_MAX_REMEMBERED = 100_000


def record_merge(merge: SessionMerge) -> None:
    """Count a session's prefix checks, mismatches and zero capture, once each."""
    checks, mismatches, zero = _seen.pop(merge.session_id, (0, 0, False))
    new_checks = max(0, merge.prefix_checks - checks)
    fresh = merge.mismatches[mismatches:]
    is_zero = merge.calls > 0 and merge.captured_calls == 0
    if is_zero and not zero:
        ZERO_CAPTURE_SESSIONS.inc()
    PREFIX_CHECKS.inc(new_checks)
    for mismatch in fresh:
        PREFIX_MISMATCHES.labels(cause=mismatch.cause).inc()
    _seen[merge.session_id] = (max(checks, merge.prefix_checks), mismatches + len(fresh), zero or is_zero)
    if len(_seen) > _MAX_REMEMBERED:
        _seen.popitem(last=False)
    _totals["checks"] += new_checks
    _totals["mismatches"] += len(fresh)
    if _totals["checks"]:
        PREFIX_MISMATCH_RATIO.set(_totals["mismatches"] / _totals["checks"])
