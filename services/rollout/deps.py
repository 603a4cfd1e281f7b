"""Dependencies of the rollout routes: the caller's key, and clients of the services the reads ask."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import Request

from shared.clients import Endpoints, RewardClient
from shared.web import AppState
from shared.web.deps import caller_key

__all__ = ["reward_client"]


@contextlib.asynccontextmanager
async def reward_client(state: AppState, request: Request) -> AsyncIterator[RewardClient]:
    """A client of the reward service (the scores it keeps) for one request, presenting the caller's own key."""
    async with Endpoints(state.settings, engine=state.engine, sessionmaker=state.sessionmaker) as endpoints, \
            await RewardClient.open(endpoints, api_key=caller_key(request)) as client:
        yield client
