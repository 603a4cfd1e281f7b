"""The proxy's hot path as plain ASGI: chat and completions calls skip FastAPI's routing and dependencies.

FastAPI's route matching, dependency solving and parameter validation cost
more CPU per call than the proxying itself, so ``ProxyFastPath`` answers the
proxy's POST routes directly, with the same behaviour as the routes in
``routes.py`` (which stay mounted: they are the OpenAPI schema, and they answer
whatever this path hands on):

- it sits inside the request middleware, which still assigns request ids,
  holds the body limit, checks the JSON, counts metrics and writes the access
  log (``scope["route"]`` is set to the matched route, so labels match);
- the key is checked by ``shared.web.deps.authenticate`` against the matched
  route's endpoint, the very check ``require_api_key`` makes;
- the call context is ``context_of``'s, as the routes build it;
- errors are rendered by the same functions as the routes and handlers.

A path the routes would refuse or treat specially (a non-numeric attempt, a
trailing slash, an empty session id) is handed on to the routes unchanged.

Served over HTTP, the same class is the app's direct entry (``shared.web.direct``):
``wants`` picks the calls it answers before the app's own layers are entered, and
the request middleware runs around it there too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.gateway.deps import ATTEMPT_HEADER, SESSION_HEADER, context_of
from services.gateway.proxy import CHAT_PATH, COMPLETIONS_PATH, GatewayProxy
from services.gateway.routes import router
from shared.errors import TrajforgeError
from shared.web.deps import authenticate
from shared.web.errors import trajforge_error_response
from shared.web.middleware import parsed_body
from shared.web.openai_errors import openai_error_response
from shared.web.state import get_app_state

__all__ = ["ProxyFastPath", "match_proxy_path"]

_TAILS = {"v1/chat/completions": CHAT_PATH, "v1/completions": COMPLETIONS_PATH}
_MATCH = "trajforge.proxy_match"
_WANTED = {b"authorization": "authorization", SESSION_HEADER.encode(): "session",
           ATTEMPT_HEADER.encode(): "attempt"}


def match_proxy_path(path: str) -> tuple[str, str, str | None, int | None] | None:
    """``(route template, upstream path, session id, attempt)`` of a proxy call path, else ``None``."""
    if path in (CHAT_PATH, COMPLETIONS_PATH):
        return path, path, None, None
    if not path.startswith("/sessions/"):
        return None
    session_id, _, rest = path[10:].partition("/")
    if not session_id:
        return None
    if rest in _TAILS:
        return f"/sessions/{{session_id}}/{rest}", _TAILS[rest], session_id, None
    if not rest.startswith("attempts/"):
        return None
    attempt, _, tail = rest[9:].partition("/")
    if tail not in _TAILS or not (attempt.isascii() and attempt.isdigit()):
        return None
    return f"/sessions/{{session_id}}/attempts/{{attempt}}/{tail}", _TAILS[tail], session_id, int(attempt)


@dataclass(frozen=True, slots=True)
class _Label:
    """The served path of a prefixed route (what metrics label it by)."""

    path: str


class ProxyFastPath:
    """ASGI middleware: answers the gateway's proxy calls, hands everything else on."""

    def __init__(self, app: ASGIApp, *, prefix: str = "") -> None:
        self.app = app
        self.prefix = prefix
        self._routes: dict[str, APIRoute] | None = None

    def wants(self, scope: Scope, app: Any) -> bool:
        """True when this is a proxy call ``app``'s gateway answers here (the match is kept on the scope)."""
        if scope["type"] != "http" or scope["method"] != "POST":
            return False
        path: str = scope["path"]
        if self.prefix:
            if not path.startswith(self.prefix):
                return False
            path = path[len(self.prefix):]
        matched = match_proxy_path(path)
        if matched is None or not isinstance(getattr(app.state, "gateway", None), GatewayProxy):
            return False
        route = self._route(matched[0])
        if route is None:
            return False
        scope[_MATCH] = (route, matched)
        return True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = scope.pop(_MATCH, None)
        if found is None and self.wants(scope, scope["app"]):
            found = scope.pop(_MATCH)
        if found is None:
            await self.app(scope, receive, send)
            return
        route, matched = found
        await self._proxy(scope, receive, send, scope["app"].state.gateway, route, matched)

    def _route(self, template: str) -> APIRoute | None:
        if self._routes is None:
            # The gateway's own route objects: their endpoints carry the scope markers the key check reads.
            self._routes = {r.path: r for r in router.routes if isinstance(r, APIRoute) and "POST" in (r.methods or ())}
        return self._routes.get(template)

    async def _proxy(
        self, scope: Scope, receive: Receive, send: Send, gateway: GatewayProxy, route: APIRoute,
        matched: tuple[str, str, str | None, int | None],
    ) -> None:
        _, upstream_path, session_id, attempt = matched
        path_params: dict[str, Any] = {"session_id": session_id} if session_id is not None else {}
        if attempt is not None:
            path_params["attempt"] = attempt
        # What the router would have recorded: the access log and metrics label by route.
        scope["route"] = route if not self.prefix else _Label(self.prefix + route.path)
        scope["endpoint"], scope["path_params"] = route.endpoint, path_params
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            want = _WANTED.get(name.lower())
            if want is not None and want not in headers:
                headers[want] = value.decode("latin-1")
        try:
            info = await authenticate(get_app_state(scope["app"]), headers.get("authorization"),
                                      route.endpoint, path_params)
        except TrajforgeError as exc:
            await trajforge_error_response(scope["path"], exc)(scope, receive, send)
            return
        if info is not None:
            scope.setdefault("state", {})["api_key"] = info
        client = scope.get("client")
        try:
            raw = await _read_body(receive)
            ctx = context_of(
                authorization=headers.get("authorization"), session_header=headers.get("session"),
                attempt_header=headers.get("attempt"), client_host=client[0] if client else None,
                api_key=info, session_id=session_id, attempt=attempt,
            )
            response = await gateway.forward(upstream_path, raw, ctx, parsed=parsed_body(scope, raw))
        except TrajforgeError as exc:
            response = openai_error_response(exc)
        await response(scope, receive, send)


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message: Message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
