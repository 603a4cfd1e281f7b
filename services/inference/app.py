"""The inference service: app factory and its ServiceSpec for the all-in-one app.

Every route (``/health`` included) sits behind the API key: the control routes
pause every caller, and ``/health`` is not the suite's liveness probe
(``/healthz`` is). In the all-in-one app the engine lives under ``/inference``
(``/inference/v1/chat/completions``), because the gateway owns ``/v1/...``
there; ``trajforge serve inference`` serves it unprefixed, as vLLM does.
Every app mounting it also offers the bare engine app in memory as ``inference``
(``shared.web.inproc``): the gateway's embedded upstream ``inproc://inference``.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI

from services.inference.routes import control_router, router, served_router
from services.inference.service import EngineHolder, get_engine_holder, reset_engine_holder
from shared.settings import Settings
from shared.web import AppState, ServiceSpec
from shared.web import create_app as _create_app
from shared.web.errors import install_error_handlers

__all__ = ["PREFIX", "SERVICE", "create_app", "create_engine_app"]

PREFIX = "/inference"


def _holder_of(host: FastAPI) -> EngineHolder:
    # Resolved per call, so an engine swapped on the host app (tests, a reload) is the one used.
    return host.dependency_overrides.get(get_engine_holder, get_engine_holder)()  # type: ignore[no-any-return]


def _offered_engine_app(host: FastAPI) -> FastAPI:
    return create_engine_app(lambda: _holder_of(host))


async def _close_engine(app: FastAPI, state: AppState) -> None:
    # Only the process-wide holder is ours to close; an override belongs to whoever set it.
    reset_engine_holder()


SERVICE = ServiceSpec(name="inference", routers=[router, control_router], shutdown=[_close_engine],
                      prefix=PREFIX, uses_redis=False, in_process_apps={"inference": _offered_engine_app})


def create_app(settings: Settings | None = None) -> FastAPI:
    """The inference service on its own."""
    return _create_app(SERVICE, settings=settings)


def create_engine_app(holder: Callable[[], EngineHolder] = get_engine_holder) -> FastAPI:
    """A bare engine app for in-process callers (the gateway's embedded upstream): no auth, no middleware."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.include_router(router)
    app.include_router(served_router)
    install_error_handlers(app)
    app.dependency_overrides[get_engine_holder] = holder
    return app
