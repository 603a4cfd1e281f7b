"""Dependencies of the gateway routes."""

from __future__ import annotations

import hashlib
from typing import Annotated

from fastapi import Depends, Request

from services.gateway.proxy import CallContext, GatewayProxy
from shared.errors import InvalidInput, ServiceUnavailable

__all__ = ["GatewayDep", "call_context", "get_gateway"]

SESSION_HEADER = "x-trajforge-session"
ATTEMPT_HEADER = "x-trajforge-attempt"


async def get_gateway(request: Request) -> GatewayProxy:
    """The gateway the app factory put on ``app.state.gateway``."""
    # async on purpose: FastAPI runs plain-def dependencies in a worker thread, a hop per call.
    gateway = getattr(request.app.state, "gateway", None)
    if gateway is None:
        raise ServiceUnavailable("The gateway is not configured on this app.")
    return gateway  # type: ignore[no-any-return]


GatewayDep = Annotated[GatewayProxy, Depends(get_gateway)]


def _rate_key(request: Request) -> str:
    auth = request.headers.get("authorization")
    if auth:
        # Rate-limit by key without keeping the key itself in memory.
        return "key:" + hashlib.sha256(auth.encode()).hexdigest()[:24]
    return "ip:" + (request.client.host if request.client else "unknown")


def _header_attempt(request: Request) -> int | None:
    raw = request.headers.get(ATTEMPT_HEADER)
    if raw is None:
        return None
    if not raw.strip().isdigit():
        raise InvalidInput(f"Header {ATTEMPT_HEADER} must be a non-negative integer.", param=ATTEMPT_HEADER)
    return int(raw)


def _api_key_id(request: Request) -> str | None:
    info = getattr(request.state, "api_key", None)
    key_id = getattr(info, "id", None)
    return str(key_id) if key_id is not None else None


def call_context(request: Request, session_id: str | None, attempt: int | None) -> CallContext:
    """Session, attempt and rate key of a call (path values win over headers)."""
    return CallContext(
        session_id=session_id or request.headers.get(SESSION_HEADER),
        attempt=attempt if attempt is not None else _header_attempt(request),
        rate_key=_rate_key(request),
        api_key_id=_api_key_id(request),
    )
