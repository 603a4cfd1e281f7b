"""The cleaning service: app factory and its ServiceSpec for the all-in-one app."""

from __future__ import annotations

from fastapi import FastAPI

from services.cleaning.browse_routes import browse_router
from services.cleaning.routes import router
from shared.settings import Settings
from shared.web import ServiceSpec
from shared.web import create_app as _create_app

__all__ = ["SERVICE", "create_app"]

SERVICE = ServiceSpec(
    name="cleaning",
    routers=[router, browse_router],
    uses_redis=True,
    task_modules=("services.cleaning.tasks",),
    description="Trajectory cleaning: datasets, filters, pipelines and dataset jobs.",
)


def create_app(settings: Settings | None = None) -> FastAPI:
    """The cleaning service on its own."""
    return _create_app(SERVICE, settings=settings)
