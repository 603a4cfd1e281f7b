"""The session a tool call belongs to, visible to tools that keep per-session state."""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["DEFAULT_SESSION", "current_session"]

DEFAULT_SESSION = "default"
# Set by the service around each call; a context variable so concurrent calls never mix.
current_session: ContextVar[str] = ContextVar("current_session", default=DEFAULT_SESSION)
