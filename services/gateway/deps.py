"""Dependencies of the gateway routes."""

from __future__ import annotations

import hashlib
from typing import Annotated

from fastapi import Depends, Request

from services.gateway.proxy import CallContext, GatewayProxy
from shared.errors import InvalidInput, ServiceUnavailable

__all__ = ["ATTEMPT_HEADER", "SESSION_HEADER", "GatewayDep", "call_context", "context_of", "get_gateway"]

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


def _rate_key_of(auth: str) -> str:
    # Rate-limit by key without keeping the key itself in memory.
    return "key:" + hashlib.sha256(auth.encode()).hexdigest()[:24]


def _header_attempt(raw: str | None) -> int | None:
    if raw is None:
        return None
    if not raw.strip().isdigit():
        raise InvalidInput(f"Header {ATTEMPT_HEADER} must be a non-negative integer.", param=ATTEMPT_HEADER)
    return int(raw)


def context_of(
    *, authorization: str | None, session_header: str | None, attempt_header: str | None,
    client_host: str | None, api_key: object, session_id: str | None, attempt: int | None,
) -> CallContext:
    """The call context from the raw request facts (path values win over headers)."""
    key_id = getattr(api_key, "id", None)
    api_key_id = str(key_id) if key_id is not None else None
    if api_key_id is not None:  # a verified key: its id names it, no hash needed
        rate_key = "key:" + api_key_id
    else:
        rate_key = _rate_key_of(authorization) if authorization else "ip:" + (client_host or "unknown")
    return CallContext(
        session_id=session_id or session_header,
        attempt=attempt if attempt is not None else _header_attempt(attempt_header),
        rate_key=rate_key, api_key_id=api_key_id,
    )


def call_context(request: Request, session_id: str | None, attempt: int | None) -> CallContext:
    """Session, attempt and rate key of a call (path values win over headers)."""
    headers = request.headers
    return context_of(
        authorization=headers.get("authorization"), session_header=headers.get(SESSION_HEADER),
        attempt_header=headers.get(ATTEMPT_HEADER), client_host=request.client.host if request.client else None,
        api_key=getattr(request.state, "api_key", None), session_id=session_id, attempt=attempt,
    )
