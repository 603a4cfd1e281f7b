"""The served entry of a service's hot path: its calls skip the layers FastAPI puts around an app.

A service's hot-path middleware (``ServiceSpec.middleware`` with a ``wants``
method; the gateway's proxy calls) answers inside the request middleware of its
FastAPI app, so in-process callers and tests reach it there. Served over HTTP
(``shared.web.server``), the same calls need none of what wraps it there:
FastAPI's telemetry and body-limit wrappers, Starlette's error middleware, the
middleware stack's dispatch. ``DirectEntry`` is the request middleware over the
hot-path middlewares alone; the server's protocol (and the in-process client,
``shared.clients.transport.AsgiExchange``) asks it whether it ``wants`` each
request and hands it those, and the whole app everything else. Request ids,
size limits, the JSON check, metrics, the access log and the error format are the
same code on both ways in.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.web.errors import INTERNAL_ERROR_MESSAGE, error_response
from shared.web.middleware import RequestMiddleware

__all__ = ["DIRECT_ATTR", "DirectEntry", "HotPath", "direct_entry_of", "hot_path_instances"]

log = logging.getLogger("trajforge.web")
#: The ``app.state`` attribute holding an app's ``DirectEntry``.
DIRECT_ATTR = "trajforge_direct"
_CHOSEN = "trajforge.hot_path"
_SERVED = "trajforge.served"


class HotPath(Protocol):
    """A hot-path middleware: it says which requests it answers, and answers them."""

    def wants(self, scope: Scope, app: Any) -> bool:
        """True when this middleware answers the request of ``scope`` on ``app`` itself."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer the request."""


async def _unreachable(scope: Scope, receive: Receive, send: Send) -> None:
    raise RuntimeError(f"a hot path handed on {scope.get('method')} {scope.get('path')}, which it said it wants")


def hot_path_instances(middleware: Sequence[Any], prefix: str) -> list[HotPath]:
    """Instances of the middleware classes that have ``wants``, each with nothing behind it."""
    return [cls(_unreachable, prefix=prefix) for cls in middleware if callable(getattr(cls, "wants", None))]


class DirectEntry:
    """The request middleware over an app's hot paths (what the server sends their requests to)."""

    def __init__(self, app: Any, hot: Sequence[HotPath], *, service: str, max_body_bytes: int) -> None:
        self.app = app
        self.hot = list(hot)
        self._entry: ASGIApp = RequestMiddleware(self._answer, service=service, max_body_bytes=max_body_bytes)

    def wants(self, scope: Scope) -> bool:
        """True when a hot path answers this request (it is remembered on the scope for ``__call__``)."""
        if scope["type"] != "http":
            return False
        for hot in self.hot:
            if hot.wants(scope, self.app):
                scope[_CHOSEN] = hot
                return True
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if _CHOSEN not in scope and not self.wants(scope):
            await self.app(scope, receive, send)  # not a hot-path call after all: the whole app
            return
        scope["app"] = self.app  # what Starlette sets for everything under it
        await self._entry(scope, receive, send)

    async def served(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``__call__`` as a server calls it: an unexpected error answered in full (the 500 in the one
        format) ends there, logged once, and the client's keep-alive connection stays usable. Re-raised
        to the server, it would close that connection under a client that may already be sending its
        next request on it. An error after the response started is still raised: the server must close
        a connection whose response was cut short."""
        scope[_SERVED] = True
        await self(scope, receive, send)

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await scope.pop(_CHOSEN)(scope, receive, tracked)
        except Exception:
            # As the app's error middleware does: the error in the one format when nothing was sent yet,
            # then the exception goes on to an in-process caller (a server is done once it answered).
            if started:
                raise
            log.exception("unhandled error on %s %s", scope["method"], scope["path"])
            await error_response(scope["path"], 500, INTERNAL_ERROR_MESSAGE, code="internal_error")(
                scope, receive, send)
            if not scope.get(_SERVED):
                raise


def direct_entry_of(app: Any) -> DirectEntry | None:
    """The ``DirectEntry`` an app carries, if any."""
    entry = getattr(getattr(app, "state", None), DIRECT_ATTR, None)
    return entry if isinstance(entry, DirectEntry) else None
