"""Per-request context (the request id) readable from logs and error handlers."""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["current_request_id", "request_id_var"]

request_id_var: ContextVar[str | None] = ContextVar("trajforge_request_id", default=None)


def current_request_id() -> str | None:
    """The id of the request being served, if any."""
    return request_id_var.get()
