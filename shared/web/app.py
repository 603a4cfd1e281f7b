"""The app factory every service uses, and the all-in-one composition.

A service is described by a ``ServiceSpec`` (its routers, start/stop hooks,
whether it needs Redis). ``create_app`` builds one FastAPI app from one or
more specs: health, readiness and metrics endpoints, request ids, JSON logs,
body limits, the one error format, and API-key auth on every router that is
not explicitly public.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.routing import APIRoute, APIWebSocketRoute
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from starlette.responses import Response

from shared.auth import KeyVerifier
from shared.db.migrate import ensure_migrated
from shared.db.session import create_engine_for, make_sessionmaker
from shared.errors import ServiceUnavailable
from shared.queue.dispatch import InProcessDispatcher, make_dispatcher
from shared.settings import Settings, get_settings
from shared.web.deps import require_api_key
from shared.web.direct import DIRECT_ATTR, DirectEntry, hot_path_instances
from shared.web.errors import install_error_handlers
from shared.web.inproc import InProcessAppFactory, offer_in_process
from shared.web.logs import configure_logging
from shared.web.middleware import RequestMiddleware
from shared.web.responses import SafeJSONResponse
from shared.web.state import AppState, get_app_state

__all__ = ["Hook", "RouterFactory", "ServiceSpec", "create_app"]

Hook = Callable[[FastAPI, AppState], Awaitable[None]]
#: Builds a router per app (for routers that hold per-app objects); it does its own auth.
RouterFactory = Callable[[FastAPI, Settings], APIRouter]


@dataclass(slots=True)
class ServiceSpec:
    """What one service contributes to an app."""

    name: str
    routers: Sequence[APIRouter] = ()
    #: Routers that do their own auth or none (health-like, capability URLs).
    public_routers: Sequence[APIRouter] = ()
    #: Per-app public routers, built when the app is created.
    public_router_factories: Sequence[RouterFactory] = ()
    startup: Sequence[Hook] = ()
    shutdown: Sequence[Hook] = ()
    uses_redis: bool = False
    #: Path prefix of the service's routers in a multi-service app (its own app stays unprefixed).
    prefix: str = ""
    description: str = ""
    #: Modules declaring the service's queue tasks (imported by the in-process runner and workers).
    task_modules: Sequence[str] = ()
    #: ASGI middleware mounted inside the request middleware (ids, body limits, JSON check, metrics and
    #: the access log still apply to what it answers), built as ``cls(app, prefix=<the routers' prefix>)``:
    #: a service's hot path that answers without FastAPI's routing and dependency solving. One with a
    #: ``wants(scope, app)`` method is also the app's ``DirectEntry`` (``shared.web.direct``): served over
    #: HTTP, the requests it wants skip the layers FastAPI and Starlette put around the app.
    middleware: Sequence[Callable[..., Any]] = ()
    #: Bare apps offered to the other services of the same app by name (``shared.web.inproc``).
    in_process_apps: Mapping[str, InProcessAppFactory] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


def _lifespan(specs: Sequence[ServiceSpec], settings: Settings, engine: AsyncEngine | None,
              maker: async_sessionmaker[AsyncSession] | None) -> Callable[[FastAPI], Any]:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own_engine = engine is None
        eng = engine or create_engine_for(settings)
        try:
            await ensure_migrated(eng)
            sm = maker or make_sessionmaker(eng)
            state = AppState(settings=settings, engine=eng, sessionmaker=sm,
                             dispatcher=make_dispatcher(settings, sm, task_modules=_task_modules(specs)),
                             verifier=KeyVerifier(sm, salt=settings.key_salt))
            if settings.redis_url and any(s.uses_redis for s in specs):
                import redis.asyncio as aioredis

                state.redis = aioredis.from_url(settings.redis_url)
            app.state.trajforge = state
            for spec in specs:
                for hook in spec.startup:
                    try:
                        await hook(app, state)
                    except Exception as exc:
                        # Which service failed, for whoever reports the start (embedded server, logs).
                        exc.add_note(f"while starting the {spec.name} service")
                        raise
            yield
            await _stop(specs, app, state)
        finally:
            if own_engine:
                await eng.dispose()

    return lifespan


def _task_modules(specs: Sequence[ServiceSpec]) -> list[str]:
    return [module for spec in specs for module in spec.task_modules]


async def _stop(specs: Sequence[ServiceSpec], app: FastAPI, state: AppState) -> None:
    if isinstance(state.dispatcher, InProcessDispatcher):
        await state.dispatcher.drain()
    for spec in reversed(specs):
        for hook in spec.shutdown:
            await hook(app, state)
    if state.redis is not None:
        await state.redis.aclose()


def _ops_router(specs: Sequence[ServiceSpec]) -> APIRouter:
    router = APIRouter(tags=["ops"])
    names = [s.name for s in specs]

    @router.get("/healthz", summary="Liveness")
    async def healthz() -> dict[str, Any]:
        """Liveness: the process answers."""
        return {"status": "ok", "services": names}

    @router.get("/readyz", summary="Readiness")
    async def readyz(request: Request) -> dict[str, Any]:
        """Readiness: the database is reachable and migrated, Redis answers where used."""
        return await _check_ready(request.app)

    @router.get("/metrics", summary="Prometheus metrics")
    async def metrics() -> Response:
        """Prometheus text exposition of this process's metrics."""
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    return router


async def _check_ready(app: FastAPI) -> dict[str, Any]:
    state = get_app_state(app)
    checks: dict[str, str] = {}
    try:
        async with state.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        await ensure_migrated(state.engine)
        checks["database"] = "ok"
    except Exception as exc:
        raise ServiceUnavailable(f"database not ready: {exc}") from exc
    if state.redis is not None:
        try:
            await state.redis.ping()
            checks["redis"] = "ok"
        except Exception as exc:
            raise ServiceUnavailable(f"redis not ready: {exc}") from exc
    return {"status": "ready", "checks": checks}


def _prefixed(router: APIRouter, prefix: str) -> APIRouter:
    """A copy of ``router`` whose routes carry ``prefix`` in their own paths.

    Copied route by route (not wrapped), so route listings (the auth coverage
    test, docs) see the paths actually served.
    """
    if not prefix:
        return router
    out = APIRouter(tags=list(router.tags), dependencies=list(router.dependencies))
    for route in router.routes:
        if isinstance(route, APIRoute):
            out.add_api_route(
                prefix + route.path, route.endpoint, methods=sorted(route.methods or ()), name=route.name,
                response_model=route.response_model, status_code=route.status_code, tags=route.tags,
                dependencies=route.dependencies, summary=route.summary, description=route.description,
                response_class=route.response_class, include_in_schema=route.include_in_schema)
        elif isinstance(route, APIWebSocketRoute):
            out.add_api_websocket_route(prefix + route.path, route.endpoint, name=route.name,
                                        dependencies=route.dependencies)
        else:
            raise TypeError(f"cannot prefix route {route!r} of a service router")
    return out


def create_app(
    specs: ServiceSpec | Sequence[ServiceSpec],
    *,
    settings: Settings | None = None,
    engine: AsyncEngine | None = None,
    sessionmaker: async_sessionmaker[AsyncSession] | None = None,
    title: str | None = None,
) -> FastAPI:
    """Build an app serving one service, or several (the all-in-one app)."""
    specs = [specs] if isinstance(specs, ServiceSpec) else list(specs)
    settings = settings or get_settings()
    configure_logging(settings.log_level, json=settings.log_json)
    app = FastAPI(
        title=title or ("trajforge " + specs[0].name if len(specs) == 1 else "trajforge"),
        version="0.1.0",
        default_response_class=SafeJSONResponse,
        lifespan=_lifespan(specs, settings, engine, sessionmaker),
        description=" ".join(s.description for s in specs if s.description),
        # Metrics are Prometheus (RequestMiddleware), not OpenTelemetry: FastAPI's native OTel bridge
        # would still look its providers up on every request, a cost on the gateway's hot path.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    install_error_handlers(app)
    app.include_router(_ops_router(specs))
    auth = [Depends(require_api_key)]
    mounted: list[tuple[APIRouter, bool]] = []
    for spec in specs:
        prefix = spec.prefix if len(specs) > 1 else ""
        mounted += [(_prefixed(router, prefix), False) for router in spec.routers]
        mounted += [(_prefixed(router, prefix), True) for router in spec.public_routers]
        mounted += [(_prefixed(factory(app, settings), prefix), True) for factory in spec.public_router_factories]
    for router, public in mounted:
        app.include_router(router) if public else app.include_router(router, dependencies=auth)
    # Kept so tests can enumerate every route, public ones included, and check auth on each.
    app.state.trajforge_routers = mounted
    for spec in specs:
        for middleware in spec.middleware:
            app.add_middleware(middleware, prefix=spec.prefix if len(specs) > 1 else "")
    name = "+".join(s.name for s in specs)
    # Added last, so it is the outermost: it wraps what the services' middleware answers.
    app.add_middleware(RequestMiddleware, service=name, max_body_bytes=settings.max_request_bytes)
    hot = [h for spec in specs
           for h in hot_path_instances(spec.middleware, spec.prefix if len(specs) > 1 else "")]
    if hot:
        setattr(app.state, DIRECT_ATTR, DirectEntry(app, hot, service=name, max_body_bytes=settings.max_request_bytes))
    for spec in specs:
        offer_in_process(app, spec.in_process_apps)
    return app
