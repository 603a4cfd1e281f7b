"""The rollout service: app factory and its ServiceSpec for the all-in-one app."""

from __future__ import annotations

from fastapi import FastAPI

from shared.settings import Settings
from shared.web import ServiceSpec, create_app as _create_app

__all__ = ["SERVICE", "create_app"]

SERVICE = ServiceSpec(name="rollout", uses_redis=True)


def create_app(settings: Settings | None = None) -> FastAPI:
    """The rollout service on its own."""
    return _create_app(SERVICE, settings=settings)
