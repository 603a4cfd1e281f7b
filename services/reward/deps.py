"""Dependencies of the reward routes."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import Request

from shared.clients import Endpoints, FunctionsClient
from shared.web import AppState

__all__ = ["functions_client"]


@contextlib.asynccontextmanager
async def functions_client(state: AppState, request: Request) -> AsyncIterator[FunctionsClient]:
    """A client of the functions service for one request, presenting the caller's own key."""
    auth = request.headers.get("authorization", "")
    api_key = auth[7:].strip() if auth[:7].lower() == "bearer " else None
    async with Endpoints(state.settings, engine=state.engine, sessionmaker=state.sessionmaker) as endpoints, \
            await FunctionsClient.open(endpoints, api_key=api_key) as client:
        yield client
