"""The one OpenAI-shaped error renderer: body, type by status, Retry-After, SSE error event.

Every app renders errors on OpenAI paths through it (``shared.web.errors``),
and so do the gateway's proxy and the inference engine's streams, so a client
sees the same ``error.type`` and the same Retry-After for the same failure
whichever service answered.

Types follow the OpenAI API: ``authentication_error`` (401),
``permission_error`` (403), ``rate_limit_error`` (429), ``server_error``
(5xx), and ``invalid_request_error`` for every other 4xx, 404 included
(OpenAI answers an unknown model with ``invalid_request_error`` +
``model_not_found``). Retry-After is whole seconds rounded up, never below
1, so a client never retries before the server said it may;
``retry-after-ms`` keeps the exact value for SDKs that read it.
"""

from __future__ import annotations

import math

import orjson
from starlette.responses import Response

from shared.errors import TrajforgeError
from shared.schema import OpenAIError, OpenAIErrorBody

__all__ = [
    "openai_error_body",
    "openai_error_response",
    "openai_error_type",
    "retry_after_headers",
    "sse_error_event",
]

_TYPE_BY_STATUS = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}


def openai_error_type(status: int) -> str:
    """The OpenAI ``error.type`` for an HTTP status."""
    if status >= 500:
        return "server_error"
    return _TYPE_BY_STATUS.get(status, "invalid_request_error")


def retry_after_headers(retry_after_s: float | None) -> dict[str, str]:
    """``retry-after`` (whole seconds, rounded up, at least 1) and ``retry-after-ms``; none without a hint."""
    if retry_after_s is None:
        return {}
    return {
        "retry-after": str(max(1, math.ceil(retry_after_s))),
        "retry-after-ms": str(max(0, int(retry_after_s * 1000))),
    }


def openai_error_body(message: str, *, status: int, code: str | None, param: str | None = None) -> OpenAIErrorBody:
    """``{"error": {message, type, param, code}}`` for a failure with this status."""
    return OpenAIErrorBody(error=OpenAIError(message=message, type=openai_error_type(status), param=param, code=code))


def _body_of(exc: TrajforgeError) -> OpenAIErrorBody:
    return openai_error_body(exc.message, status=exc.status_code, code=exc.code, param=exc.param)


def openai_error_response(exc: TrajforgeError) -> Response:
    """A JSON response with the OpenAI error body, the error's status and its Retry-After."""
    return Response(content=orjson.dumps(_body_of(exc).model_dump()), status_code=exc.status_code,
                    media_type="application/json", headers=retry_after_headers(exc.retry_after_s))


def sse_error_event(exc: TrajforgeError) -> bytes:
    """A mid-stream SSE error event followed by the end marker (the status is already 200)."""
    return b"data: " + orjson.dumps(_body_of(exc).model_dump()) + b"\n\ndata: [DONE]\n\n"
