"""Gateway errors (subclasses of the shared tree) and their OpenAI-shaped rendering.

    NotFound
    └── UnknownModel (404, model_not_found)
    PermissionDenied
    └── PathNotAllowed (403, path_not_allowed)
    InvalidInput
    └── ToolPairingError (400, invalid_tool_pairing)
    ClientError
    └── ClientClosed (499, client_closed)   -- recorded on traces, never sent
"""

from __future__ import annotations

import math

import orjson
from starlette.responses import Response

from shared.errors import ClientError, InvalidInput, NotFound, PermissionDenied, TrajforgeError
from shared.schema import OpenAIError, OpenAIErrorBody

__all__ = [
    "ClientClosed",
    "PathNotAllowed",
    "ToolPairingError",
    "UnknownModel",
    "error_body",
    "error_response",
    "openai_error_type",
    "sse_error_event",
]


class UnknownModel(NotFound):
    """No upstream serves the requested model name."""

    code = "model_not_found"
    title = "Model not found"


class PathNotAllowed(PermissionDenied):
    """The path is not on the upstream allow-list (control endpoints never pass)."""

    code = "path_not_allowed"
    title = "Path not allowed"


class ToolPairingError(InvalidInput):
    """Assistant tool calls and tool messages do not answer each other one to one."""

    code = "invalid_tool_pairing"
    title = "Tool calls and tool messages do not pair"


class ClientClosed(ClientError):
    """The client went away before a streamed answer ended."""

    status_code = 499
    code = "client_closed"
    title = "Client closed the connection"


_TYPE_BY_STATUS = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}


def openai_error_type(status: int) -> str:
    """The OpenAI ``error.type`` for an HTTP status."""
    if status >= 500:
        return "server_error"
    return _TYPE_BY_STATUS.get(status, "invalid_request_error")


def error_body(exc: TrajforgeError) -> OpenAIErrorBody:
    """The OpenAI error body for one of our errors."""
    err = OpenAIError(
        message=exc.message,
        type=openai_error_type(exc.status_code),
        param=exc.param,
        code=exc.code,
    )
    return OpenAIErrorBody(error=err)


def _retry_headers(exc: TrajforgeError) -> dict[str, str]:
    if exc.retry_after_s is None:
        return {}
    # Retry-After takes whole seconds; the -ms form keeps sub-second precision for SDKs that read it.
    return {
        "retry-after": str(max(1, math.ceil(exc.retry_after_s))),
        "retry-after-ms": str(int(exc.retry_after_s * 1000)),
    }


def error_response(exc: TrajforgeError) -> Response:
    """A JSON response with the OpenAI error body, the error's status and Retry-After."""
    return Response(
        content=orjson.dumps(error_body(exc).model_dump()),
        status_code=exc.status_code,
        media_type="application/json",
        headers=_retry_headers(exc),
    )


def sse_error_event(exc: TrajforgeError) -> bytes:
    """A mid-stream SSE error event followed by the end marker (status is already 200)."""
    return b"data: " + orjson.dumps(error_body(exc).model_dump()) + b"\n\ndata: [DONE]\n\n"
