"""Turn an upstream's non-200 reply into one of our errors, keeping its message."""

from __future__ import annotations

from typing import Any

import orjson

from services.gateway.retry import parse_retry_after
from shared.errors import (
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    TrajforgeError,
    UpstreamError,
    UpstreamTimeout,
    UpstreamUnavailable,
)

__all__ = ["upstream_error", "upstream_message"]

_BY_STATUS: dict[int, type[TrajforgeError]] = {
    400: InvalidInput,
    404: NotFound,
    413: PayloadTooLarge,
    422: InvalidInput,
    429: RateLimited,
    503: UpstreamUnavailable,
    504: UpstreamTimeout,
}


def upstream_message(body: bytes) -> str:
    """The error message of an upstream body in any of the OpenAI/vLLM shapes."""
    try:
        data: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body[:500].decode("utf-8", "replace")
    if isinstance(data, dict):
        inner = data.get("error")
        err = inner if isinstance(inner, dict) else data
        msg = err.get("message") or err.get("detail")
        if msg:
            return str(msg)
    return str(data)[:500]


def upstream_error(status: int, body: bytes, headers: dict[str, str], replica: str) -> TrajforgeError:
    """Our error for an upstream status: 4xx keep their meaning, the rest become 502."""
    cls = _BY_STATUS.get(status, UpstreamError)
    message = f"Upstream {replica} answered {status}: {upstream_message(body)}"
    return cls(message, retry_after_s=parse_retry_after(headers))
