"""The console service: app factory and its ServiceSpec for the all-in-one app.

The console is static files (HTML, CSS, JavaScript shipped in this package)
that read the public REST API in the browser with the user's own key. In the
all-in-one app the API is the same origin. Served on its own, the console
forwards ``/ui/api/...`` to ``TRAJFORGE_CONSOLE_API_URL`` (and to
``TRAJFORGE_CONSOLE_ROUTES`` by path prefix), so the browser still talks to
one origin and no CORS opening is needed on the services.
"""

from __future__ import annotations

from fastapi import FastAPI

from services.console.routes import console_router
from shared.settings import Settings
from shared.web import AppState, ServiceSpec
from shared.web import create_app as _create_app

__all__ = ["SERVICE", "create_app"]


async def _close_proxy(app: FastAPI, state: AppState) -> None:
    proxy = getattr(app.state, "console_proxy", None)
    if proxy is not None:
        await proxy.aclose()


SERVICE = ServiceSpec(
    name="console",
    public_router_factories=[console_router],
    shutdown=[_close_proxy],
    description="The trajectory console: a web UI for jobs, groups, trajectories, sessions and search.",
)


def create_app(settings: Settings | None = None) -> FastAPI:
    """The console on its own."""
    return _create_app(SERVICE, settings=settings)
