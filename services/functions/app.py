"""The functions service: app factory and its ServiceSpec for the all-in-one app."""

from __future__ import annotations

from fastapi import FastAPI

from services.functions.routes import router
from services.functions.service import FunctionsService
from shared.settings import Settings
from shared.web import AppState, ServiceSpec
from shared.web import create_app as _create_app

__all__ = ["SERVICE", "create_app"]


async def _start(app: FastAPI, state: AppState) -> None:
    state.resources["functions"] = FunctionsService(state.settings)


async def _stop(app: FastAPI, state: AppState) -> None:
    service = state.resources.pop("functions", None)
    if service is not None:
        await service.close()


SERVICE = ServiceSpec(
    name="functions",
    routers=[router],
    startup=[_start],
    shutdown=[_stop],
    description="Uploaded function components (rollout and reward processors) in isolated, autoscaled workers.",
)


def create_app(settings: Settings | None = None) -> FastAPI:
    """The functions service on its own."""
    return _create_app(SERVICE, settings=settings)
