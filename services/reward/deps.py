"""Dependencies of the reward routes and tasks: clients of the services they call."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shared.auth import create_key, revoke_key
from shared.clients import Endpoints, FunctionsClient, RolloutClient
from shared.db.session import engine_of
from shared.settings import Settings
from shared.web import AppState
from shared.web.deps import caller_key

__all__ = ["functions_client", "rollout_client", "task_rollout_client"]


@contextlib.asynccontextmanager
async def functions_client(state: AppState, request: Request) -> AsyncIterator[FunctionsClient]:
    """A client of the functions service for one request, presenting the caller's own key."""
    async with Endpoints(state.settings, engine=state.engine, sessionmaker=state.sessionmaker) as endpoints, \
            await FunctionsClient.open(endpoints, api_key=caller_key(request)) as client:
        yield client


@contextlib.asynccontextmanager
async def rollout_client(state: AppState, request: Request) -> AsyncIterator[RolloutClient]:
    """A client of the rollout service (jobs and their trajectories) for one request, with the caller's key."""
    async with Endpoints(state.settings, engine=state.engine, sessionmaker=state.sessionmaker) as endpoints, \
            await RolloutClient.open(endpoints, api_key=caller_key(request)) as client:
        yield client


@contextlib.asynccontextmanager
async def task_rollout_client(settings: Settings, maker: async_sessionmaker[AsyncSession]
                              ) -> AsyncIterator[RolloutClient]:
    """A client of the rollout service for one task, with a key of its own revoked when the block ends."""
    async with maker() as session:
        row, key = await create_key(session, "reward-task", salt=settings.key_salt)
        await session.commit()
    try:
        async with Endpoints(settings, engine=engine_of(maker), sessionmaker=maker) as endpoints, \
                await RolloutClient.open(endpoints, api_key=key) as client:
            yield client
    finally:
        async with maker() as session:
            await revoke_key(session, row.id)
            await session.commit()
