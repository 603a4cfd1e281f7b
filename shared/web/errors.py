"""One error format per app: problem details, or the OpenAI body on OpenAI paths."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from shared.errors import TrajforgeError
from shared.web.context import current_request_id
from shared.web.openai_errors import openai_error_body, retry_after_headers
from shared.web.responses import SafeJSONResponse

__all__ = [
    "INTERNAL_ERROR_MESSAGE", "error_response", "install_error_handlers", "is_openai_path", "trajforge_error_response",
]

log = logging.getLogger("trajforge.web")

_OPENAI_PATH = re.compile(r"(^|/)v1/(chat/completions|completions|models|embeddings|responses)(/|$)|/(de)?tokenize$")
_TITLES = {400: "Bad request", 401: "Authentication required", 403: "Forbidden", 404: "Not found",
           405: "Method not allowed", 413: "Payload too large", 422: "Validation failed",
           429: "Too many requests", 500: "Internal error", 502: "Bad gateway",
           503: "Service unavailable", 504: "Gateway timeout"}


#: What a caller is told about an unexpected error (the log has the rest, under the request id).
INTERNAL_ERROR_MESSAGE = "internal error; see the server log for this request id"


def is_openai_path(path: str) -> bool:
    """True for OpenAI-compatible endpoints, which answer with OpenAI-shaped errors."""
    return bool(_OPENAI_PATH.search(path))


def error_response(
    path: str,
    status: int,
    message: str,
    *,
    code: str,
    title: str | None = None,
    param: str | None = None,
    errors: list[dict[str, Any]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """Render an error in the format of the endpoint at ``path``."""
    if is_openai_path(path):
        body = openai_error_body(message, status=status, code=code, param=param).model_dump()
        return SafeJSONResponse(body, status_code=status, headers=headers)
    problem = {
        "type": "about:blank",
        "title": title or _TITLES.get(status, "Error"),
        "status": status,
        "detail": message,
        "code": code,
        "instance": path,
        "request_id": current_request_id(),
    }
    if param:  # an extension member: which request field the error is about
        problem["param"] = param
    if errors:
        problem["errors"] = errors
    return SafeJSONResponse(problem, status_code=status, headers=headers, media_type="application/problem+json")


def _validation_message(errors: list[dict[str, Any]]) -> tuple[str, str | None]:
    if not errors:
        return "request validation failed", None
    first = errors[0]
    loc = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    return f"{loc or 'body'}: {first.get('msg', 'invalid')}", loc or None


def trajforge_error_response(path: str, exc: TrajforgeError) -> Response:
    """What the app answers for an error of our tree raised on ``path`` (5xx are logged)."""
    if exc.status_code >= 500:
        log.warning("request failed: %s (%s)", exc.message, exc.code)
    return error_response(path, exc.status_code, exc.message, code=exc.code,
                          title=exc.title, param=exc.param, headers=retry_after_headers(exc.retry_after_s) or None)


async def _on_trajforge_error(request: Request, exc: TrajforgeError) -> Response:
    return trajforge_error_response(request.url.path, exc)


async def _on_validation_error(request: Request, exc: RequestValidationError) -> Response:
    errors = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in exc.errors()]
    message, param = _validation_message(errors)
    status = 400 if is_openai_path(request.url.path) else 422
    return error_response(request.url.path, status, message, code="validation_failed", param=param, errors=errors)


async def _on_http_error(request: Request, exc: StarletteHTTPException) -> Response:
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"no route for {request.method} {request.url.path}"
    return error_response(request.url.path, exc.status_code, detail, code=code, headers=exc.headers)


async def _on_unhandled(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(request.url.path, 500, INTERNAL_ERROR_MESSAGE, code="internal_error")


def install_error_handlers(app: FastAPI) -> None:
    """Register the one error format on an app."""
    app.add_exception_handler(TrajforgeError, _on_trajforge_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _on_validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _on_http_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _on_unhandled)
