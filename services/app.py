"""The all-in-one app: every service in one process (the embedded default)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from shared.clients.transport import APPS
from shared.settings import Settings
from shared.web import ServiceSpec, create_app
from shared.web.inproc import offer_in_process

__all__ = ["EMBEDS", "SERVICE_NAMES", "all_specs", "all_task_modules", "build_in_process_app",
           "create_all_in_one_app", "create_service_app", "service_spec"]

SERVICE_NAMES: tuple[str, ...] = ("gateway", "inference", "cleaning", "tools", "envs", "rollout", "reward",
                                   "functions", "console")
#: Other services whose in-process apps a service's own app offers: a gateway served alone (``trajforge
#: serve gateway``, a queue worker's gateway) keeps the local engine as its embedded upstream, as all-in-one.
EMBEDS: dict[str, tuple[str, ...]] = {"gateway": ("inference",)}


def service_spec(name: str) -> ServiceSpec:
    """The ServiceSpec of one service, by name."""
    if name not in SERVICE_NAMES:
        raise ValueError(f"unknown service {name!r}; choose one of {', '.join(SERVICE_NAMES)}")
    import importlib

    return importlib.import_module(f"services.{name}.app").SERVICE  # type: ignore[no-any-return]


def all_specs() -> list[ServiceSpec]:
    """Every service's spec, in mount order."""
    return [service_spec(n) for n in SERVICE_NAMES]


def all_task_modules() -> list[str]:
    """Every service's task modules: what a worker for the whole deployment loads."""
    return [module for spec in all_specs() for module in spec.task_modules]


def create_all_in_one_app(settings: Settings | None = None) -> FastAPI:
    """Every service mounted in one app, sharing one database and dispatcher.

    While it runs, the app is the in-process endpoint of every service it mounts
    (``shared.clients.APPS``), so the service clients of this process reach these
    very services (their sandbox pool, registered tools and metrics), not copies.
    """
    specs = all_specs()
    app = create_app(specs, settings=settings, title="trajforge")
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: FastAPI) -> AsyncIterator[None]:
        async with inner(a):
            for spec in specs:
                APPS.register(spec.name, a, prefix=spec.prefix)
            try:
                yield
            finally:
                APPS.unregister(a)

    app.router.lifespan_context = lifespan
    return app


def create_service_app(name: str, *, settings: Settings | None = None, engine: Any = None,
                       sessionmaker: Any = None) -> FastAPI:
    """One service's app, offering the in-process apps it embeds (``EMBEDS``)."""
    app = create_app(service_spec(name), settings=settings, engine=engine, sessionmaker=sessionmaker)
    for other in EMBEDS.get(name, ()):
        offer_in_process(app, service_spec(other).in_process_apps)
    return app


def build_in_process_app(service: str, settings: Settings, engine: Any = None, sessionmaker: Any = None) -> FastAPI:
    """One service's app for a caller in this process (``shared.clients.Endpoints``), on the caller's database."""
    return create_service_app(service, settings=settings, engine=engine, sessionmaker=sessionmaker)
