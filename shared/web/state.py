"""What an app holds while it runs: settings, database, dispatcher, key verifier."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from shared.auth import KeyVerifier
from shared.queue.dispatch import Dispatcher
from shared.settings import Settings

__all__ = ["AppState", "get_app_state"]


@dataclass(slots=True)
class AppState:
    """Process-wide resources of one app, built in its lifespan."""

    settings: Settings
    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]
    dispatcher: Dispatcher
    verifier: KeyVerifier
    redis: Any = None
    #: Service-owned resources (sandbox pool, model engine, ...) by name.
    resources: dict[str, Any] = field(default_factory=dict)


def get_app_state(app: FastAPI) -> AppState:
    """The running app's state; fails clearly when the lifespan did not run."""
    state = getattr(app.state, "trajforge", None)
    if state is None:
        raise RuntimeError("app state is missing: the app's lifespan has not run")
    return cast(AppState, state)
