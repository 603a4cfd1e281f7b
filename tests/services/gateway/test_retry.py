"""Retry classification, backoff growth and Retry-After parsing."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from services.gateway.config import RetryPolicy
from services.gateway.retry import backoff_s, is_retryable_status, parse_retry_after, retry_delay_s


def test_retryable_statuses_match_the_openai_sdk_set() -> None:
    assert [s for s in (200, 400, 401, 404, 408, 409, 422, 429, 500, 502, 503, 504) if is_retryable_status(s)] == [
        408, 409, 429, 500, 502, 503, 504,
    ]


def test_backoff_doubles_within_jitter_and_is_capped() -> None:
    policy = RetryPolicy(base_s=0.5, max_backoff_s=8.0, jitter=0.25)
    rng = random.Random(7)
    for attempt in range(8):
        raw = min(8.0, 0.5 * 2**attempt)
        delay = backoff_s(attempt, policy, rng)
        assert raw * 0.75 <= delay <= raw * 1.25


def test_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (parse_retry_after({"retry-after": later}) or 0) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_retry_after_wins_over_backoff_but_is_capped() -> None:
    policy = RetryPolicy(base_s=0.01, max_retry_after_s=5)
    assert retry_delay_s(0, policy, {"retry-after": "2"}) == 2.0
    assert retry_delay_s(0, policy, {"retry-after": "120"}) == 5.0
    assert retry_delay_s(0, policy, {}) <= 0.0125
