"""Which upstream failures are retried, and how long to wait before the next try."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from services.gateway.config import RetryPolicy

__all__ = ["backoff_s", "is_retryable_status", "parse_retry_after", "retry_delay_s"]


def is_retryable_status(status: int) -> bool:
    """408, 409, 429 and every 5xx are worth another try (the OpenAI SDK's own set)."""
    return status in (408, 409, 429) or status >= 500


def backoff_s(attempt: int, policy: RetryPolicy, rng: random.Random | None = None) -> float:
    """Delay before retry number ``attempt`` (0-based): base·2^attempt, capped, ± jitter."""
    raw: float = min(policy.max_backoff_s, policy.base_s * (2**attempt))
    spread = raw * policy.jitter
    return max(0.0, raw + (rng or random).uniform(-spread, spread))


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def retry_delay_s(
    attempt: int, policy: RetryPolicy, headers: Mapping[str, str] | None = None
) -> float:
    """Retry-After when given (capped by policy), else exponential backoff."""
    hinted = parse_retry_after(headers) if headers is not None else None
    if hinted is not None:
        return min(hinted, policy.max_retry_after_s)
    return backoff_s(attempt, policy)
