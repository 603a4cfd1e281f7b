"""Token buckets per key."""

from __future__ import annotations

import pytest

from services.gateway.config import RateLimitPolicy
from services.gateway.ratelimit import KeyedRateLimiter, TokenBucket
from shared.errors import RateLimited


def test_bucket_spends_burst_then_refills_at_rate() -> None:
    bucket = TokenBucket(rate_per_s=2.0, burst=3, now=0.0)
    assert [bucket.take(now=0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take(now=0.0) == pytest.approx(0.5)
    assert bucket.take(now=0.5) == 0.0
    assert bucket.take(now=0.5) > 0


def test_limiter_is_per_key_and_says_when_to_retry() -> None:
    limiter = KeyedRateLimiter(RateLimitPolicy(rate_per_s=1.0, burst=1))
    limiter.check("a")
    with pytest.raises(RateLimited) as info:
        limiter.check("a")
    assert info.value.status_code == 429 and 0 < (info.value.retry_after_s or 0) <= 1
    limiter.check("b")


def test_limiter_off_when_rate_is_zero_and_forgets_old_keys() -> None:
    off = KeyedRateLimiter(RateLimitPolicy(rate_per_s=0))
    for _ in range(1000):
        off.check("a")
    small = KeyedRateLimiter(RateLimitPolicy(rate_per_s=1, burst=1, max_keys=2))
    for key in ("a", "b", "c"):
        small.check(key)
    small.check("a")  # "a" was evicted, so it starts with a full bucket again
