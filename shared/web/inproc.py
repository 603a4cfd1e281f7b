"""Bare ASGI apps a service offers to the other services of its app, reached in memory by name.

A service lists them in ``ServiceSpec.in_process_apps`` (name → factory); ``create_app``
builds them for every app that mounts the service, and a composition that serves a
service alone may add another's with ``offer_in_process``. The gateway's embedded
upstream ``inproc://inference`` is one: the local engine's routes without auth or
middleware, so a proxied call pays for the gateway's layers only. Unlike the whole
service apps of ``shared.clients.transport.APPS`` (process-wide, registered while the
all-in-one app runs), these belong to one app: the factory is given that app, so an
engine swapped on it (its dependency overrides) is the one its callers reach.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from fastapi import FastAPI
from starlette.types import ASGIApp

__all__ = ["InProcessAppFactory", "in_process_apps", "offer_in_process"]

#: Builds an offered app for the app that hosts it.
InProcessAppFactory = Callable[[FastAPI], ASGIApp]
_ATTR = "trajforge_in_process_apps"


def in_process_apps(app: FastAPI) -> dict[str, ASGIApp]:
    """The apps offered on ``app`` by name; the same dict each call, so later offers show in it."""
    offered: dict[str, ASGIApp] | None = getattr(app.state, _ATTR, None)
    if offered is None:
        offered = {}
        setattr(app.state, _ATTR, offered)
    return offered


def offer_in_process(app: FastAPI, factories: Mapping[str, InProcessAppFactory]) -> None:
    """Build each factory's app for ``app`` and offer it there under its name."""
    offered = in_process_apps(app)
    for name, factory in factories.items():
        offered[name] = factory(app)
