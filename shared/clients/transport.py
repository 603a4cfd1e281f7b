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
code path. In-process HTTP goes through ``httpx.ASGITransport``; in-process
WebSockets through ``shared.clients.asgi_ws`` (the ASGI websocket protocol
driven directly, no socket).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from shared.settings import Settings

__all__ = ["APPS", "COMPOSITION_MODULE", "SERVICES", "Endpoint", "Endpoints", "InProcessApps"]

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
