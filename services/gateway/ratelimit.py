"""Per-key token-bucket rate limiting."""

from __future__ import annotations

import time
from collections import OrderedDict

from services.gateway.config import RateLimitPolicy
from shared.errors import RateLimited

__all__ = ["KeyedRateLimiter", "TokenBucket"]


class TokenBucket:
    """A bucket of ``burst`` tokens refilled at ``rate_per_s``."""

    def __init__(self, rate_per_s: float, burst: int, *, now: float | None = None) -> None:
        self.rate_per_s = rate_per_s
        self.burst = burst
        self.tokens = float(burst)
        self.stamp = time.monotonic() if now is None else now

    def take(self, *, now: float | None = None) -> float:
        """Take one token; return 0 on success, else the seconds until one is available."""
        now = time.monotonic() if now is None else now
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate_per_s)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate_per_s


class KeyedRateLimiter:
    """One token bucket per key, least recently used keys forgotten beyond ``max_keys``."""

    def __init__(self, policy: RateLimitPolicy) -> None:
        self.policy = policy
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    def check(self, key: str) -> None:
        """Admit one request for ``key`` or raise ``RateLimited`` with a retry delay."""
        if self.policy.rate_per_s <= 0:
            return
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = TokenBucket(self.policy.rate_per_s, self.policy.burst)
            self._buckets[key] = bucket
            if len(self._buckets) > self.policy.max_keys:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        wait_s = bucket.take()
        if wait_s > 0:
            raise RateLimited(
                f"Rate limit of {self.policy.rate_per_s:g} requests/s exceeded for this key; "
                f"retry in {wait_s:.2f} s.",
                retry_after_s=wait_s,
            )
