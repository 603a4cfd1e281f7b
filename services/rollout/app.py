"""The rollout service: app factory and its ServiceSpec for the all-in-one app."""

from __future__ import annotations

from fastapi import FastAPI

from services.rollout.browse_routes import browse_router
from services.rollout.export_routes import export_router
from services.rollout.opd_routes import opd_router
from services.rollout.routes import router
from shared.settings import Settings
from shared.web import ServiceSpec
from shared.web import create_app as _create_app

__all__ = ["SERVICE", "create_app"]

SERVICE = ServiceSpec(
    name="rollout",
    routers=[router, export_router, browse_router, opd_router],
    uses_redis=True,
    task_modules=("services.rollout.tasks",),
    description="Group rollouts against a policy with tools or an env: token-exact, scored, crash-safe.",
)


def create_app(settings: Settings | None = None) -> FastAPI:
    """The rollout service on its own."""
    return _create_app(SERVICE, settings=settings)
