"""The reward service: app factory and its ServiceSpec for the all-in-one app."""

from __future__ import annotations

import asyncio

from fastapi import FastAPI

from services.reward.mathcheck import shutdown_pool
from services.reward.routes import router
from shared.settings import Settings
from shared.web import AppState, ServiceSpec
from shared.web import create_app as _create_app

__all__ = ["SERVICE", "create_app"]


async def _stop(app: FastAPI, state: AppState) -> None:
    await asyncio.to_thread(shutdown_pool)


SERVICE = ServiceSpec(
    name="reward",
    routers=[router],
    shutdown=[_stop],
    uses_redis=True,
    task_modules=("services.reward.tasks",),
    description="Reward scoring with provenance, GRPO/RLOO/REINFORCE++ advantages.",
)


def create_app(settings: Settings | None = None) -> FastAPI:
    """The reward service on its own."""
    return _create_app(SERVICE, settings=settings)
