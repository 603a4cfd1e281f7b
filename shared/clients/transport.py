"""The one transport seam of every service client: a URL when split, the service's app when embedded.

``Endpoints.get(service)`` answers where a client reaches ``service``:

1. ``TRAJFORGE_<SERVICE>_URL`` is set: over the network, to that URL.
2. Otherwise a running app of this process registered itself for the service
   (the all-in-one app does, for every service it mounts): its ASGI callable,
   so a tool registered on it, its sandbox pool and its metrics are the ones
   the caller uses.
3. Otherwise the composition layer builds the service's app for the caller
   (``COMPOSITION_MODULE``, named here as a string so ``shared`` imports no
   service), sharing the caller's database, and ``Endpoints`` runs its
   startup and shutdown around the caller's block (a queue worker, a test).

Whatever the answer, the client code above the transport is the same: one
code path. In-process HTTP goes through ``AsgiExchange`` (the ASGI HTTP protocol
driven directly, as ``httpx.ASGITransport`` drives it, without building httpx
requests and responses: on the gateway's hot path those layers cost more CPU
than the call they carry); in-process WebSockets through
``shared.clients.asgi_ws`` (the ASGI websocket protocol driven directly, no socket).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import httpx

from shared.settings import Settings
from shared.web.direct import direct_entry_of

__all__ = ["APPS", "COMPOSITION_MODULE", "SERVICES", "AsgiExchange", "Endpoint", "Endpoints", "InProcessApps", "Reply"]

#: Every service a client exists for, in the order of the URL table.
SERVICES: tuple[str, ...] = ("gateway", "inference", "cleaning", "tools", "envs", "rollout", "reward", "functions")
#: Module whose ``build_in_process_app(service, settings, engine, sessionmaker)`` builds a service's app.
COMPOSITION_MODULE = "services.app"

AppBuilder = Callable[[str, Settings, Any, Any], Any]


@dataclass(frozen=True)
class Endpoint:
    """Where one service is reached: ``base_url`` over the network, or ``app`` in this process."""

    service: str
    base_url: str
    app: Any = None

    @property
    def in_process(self) -> bool:
        """True when calls go to an ASGI app in this process (no socket)."""
        return self.app is not None

    def transport(self) -> httpx.AsyncBaseTransport:
        """The httpx transport of this endpoint."""
        if self.app is not None:
            return httpx.ASGITransport(app=self.app)
        return httpx.AsyncHTTPTransport()

    def exchange(self, headers: Mapping[str, str] | None = None) -> AsgiExchange:
        """The in-process exchange of this endpoint's app, sending ``headers`` on every call."""
        if self.app is None:
            raise ValueError(f"the {self.service} endpoint {self.base_url} is not in this process")
        return AsgiExchange(self.app, self.base_url, headers=headers)


@dataclass(slots=True)
class Reply:
    """Status, lower-cased headers and the whole body of one in-process call."""

    status_code: int
    headers: dict[str, str]
    content: bytes

    def to_httpx(self, method: str, url: str) -> httpx.Response:
        """The same answer as an ``httpx.Response`` (for code that reads error bodies from one)."""
        return httpx.Response(self.status_code, headers=self.headers, content=self.content,
                              request=httpx.Request(method, url))


class AsgiExchange:
    """One HTTP call into an ASGI app of this process: the scope, the body in, the answer collected.

    What ``httpx.ASGITransport`` does, and no more: the request body is given once, a later
    ``receive`` waits until the answer is complete and then reports a disconnect (so a streamed
    answer runs to its end), the body parts are joined, and an exception of the app reaches the
    caller. Like that transport it sets no deadline of its own: the call runs to completion.
    """

    def __init__(self, app: Any, base_url: str, *, headers: Mapping[str, str] | None = None) -> None:
        parts = urlsplit(base_url)
        self.app = app
        self.base_url = base_url.rstrip("/")
        self._prefix = parts.path.rstrip("/")
        self._server = (parts.hostname or "localhost", parts.port or 80)
        host = parts.netloc.encode("latin-1")
        self._headers = [(b"host", host)] + [(k.lower().encode("latin-1"), v.encode("latin-1"))
                                             for k, v in (headers or {}).items()]

    async def send(self, method: str, path: str, *, query: str = "", content: bytes = b"",
                   headers: Mapping[str, str] | None = None) -> Reply:
        """Send one request (``path`` below the base URL, already percent-encoded) and collect the answer."""
        raw_path = quote(self._prefix + path, safe="/%:@!$&'()*+,;=-._~")
        head = list(self._headers)
        head += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
        head.append((b"content-length", str(len(content)).encode()))
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
            "headers": head, "scheme": "http", "path": unquote(raw_path), "raw_path": raw_path.encode("latin-1"),
            "query_string": query.encode("latin-1"), "server": self._server, "client": ("127.0.0.1", 123),
            "root_path": "",
        }
        # A service's hot path (the gateway's proxy calls) is entered past the app's own layers, as served.
        entry = direct_entry_of(self.app)
        app = entry if entry is not None and entry.wants(scope) else self.app
        return await _Call(content, method != "HEAD").run(app, scope)


class _Call:
    """The state of one in-process exchange (the ASGI ``receive`` and ``send`` callables)."""

    __slots__ = ("_body", "_complete", "_done", "_headers", "_keep_body", "_parts", "_status")

    def __init__(self, body: bytes, keep_body: bool) -> None:
        self._body: bytes | None = body
        self._keep_body = keep_body
        self._complete = False
        self._done: asyncio.Event | None = None  # made only when someone waits for the end
        self._parts: list[bytes] = []
        self._status: int | None = None
        self._headers: dict[str, str] = {}

    async def run(self, app: Any, scope: dict[str, Any]) -> Reply:
        await app(scope, self._receive, self._send)
        if self._status is None:
            raise RuntimeError("the in-process app returned without starting a response")
        return Reply(self._status, self._headers, b"".join(self._parts))

    async def _receive(self) -> dict[str, Any]:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        if not self._complete:
            if self._done is None:
                self._done = asyncio.Event()
            await self._done.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: Mapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self._status = int(message["status"])
            self._headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in message.get("headers", ())}
        elif message["type"] == "http.response.body":
            body = message.get("body", b"")
            if body and self._keep_body:
                self._parts.append(body)
            if not message.get("more_body", False):
                self._complete = True
                if self._done is not None:
                    self._done.set()


def _in_process_root(service: str, prefix: str) -> str:
    return f"http://{service}.internal{prefix}"


class InProcessApps:
    """The running service apps of this process, by service name (filled by the composition layer)."""

    def __init__(self) -> None:
        self._apps: dict[str, tuple[Any, str]] = {}

    def register(self, service: str, app: Any, *, prefix: str = "") -> None:
        """Serve ``service`` from ``app`` (its routes under ``prefix``) while the app runs."""
        self._apps[service] = (app, prefix)

    def unregister(self, app: Any) -> None:
        """Forget every service ``app`` registered (called when it stops)."""
        for name in [n for n, (a, _) in self._apps.items() if a is app]:
            del self._apps[name]

    def lookup(self, service: str) -> tuple[Any, str] | None:
        """The running app and route prefix of ``service``, if one registered."""
        return self._apps.get(service)


#: The process-wide registry of running apps.
APPS = InProcessApps()


def _builder() -> AppBuilder:
    module = importlib.import_module(COMPOSITION_MODULE)
    builder: AppBuilder = module.build_in_process_app
    return builder


@dataclass
class Endpoints:
    """Endpoints of every service for one unit of work; apps it had to build stop with ``aclose``.

    ``engine`` and ``sessionmaker`` are the caller's database handles: an app built
    here shares them, so keys the caller created are seen by the app it calls.
    """

    settings: Settings
    engine: Any = None
    sessionmaker: Any = None
    registry: InProcessApps = field(default_factory=lambda: APPS)
    _built: dict[str, Endpoint] = field(default_factory=dict)
    _stack: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)

    async def get(self, service: str) -> Endpoint:
        """Where ``service`` is reached (URL, running app, or an app started for this block)."""
        if service not in SERVICES:
            raise ValueError(f"unknown service {service!r}; choose one of {', '.join(SERVICES)}")
        url = self.settings.service_url(service)
        if url:
            return Endpoint(service, url.rstrip("/"))
        running = self.registry.lookup(service)
        if running is not None:
            app, prefix = running
            return Endpoint(service, _in_process_root(service, prefix), app)
        if service not in self._built:
            app = _builder()(service, self.settings, self.engine, self.sessionmaker)
            await self._stack.enter_async_context(app.router.lifespan_context(app))
            self._built[service] = Endpoint(service, _in_process_root(service, ""), app)
        return self._built[service]

    async def aclose(self) -> None:
        """Stop the apps this block started (latest first)."""
        self._built.clear()
        await self._stack.aclose()

    async def __aenter__(self) -> Endpoints:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
