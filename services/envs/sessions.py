"""Session slots: a capped table of live env sessions with idle tracking."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from services.envs.base import Env
from services.envs.metrics import ENV_RESETS, ENV_STEPS
from services.envs.wire import ResetData, ToolValidators, action_to_call

__all__ = ["EnvSession", "SessionTable"]

T = TypeVar("T")
Closer = Callable[[], Awaitable[None]]


class EnvSession:
    """One env instance with its episode bookkeeping; serialises calls on itself."""

    def __init__(self, name: str, env: Env, *, kind: str) -> None:
        self.id = uuid.uuid4().hex
        self.name = name
        self.env = env
        self.kind = kind
        self.episode_id: str | None = None
        self.step_count = 0
        self.last_activity = time.monotonic()
        self.closed = False
        self.lock = asyncio.Lock()
        self.validators = ToolValidators(env)
        # Set by the WebSocket loop so the idle reaper can really close the socket.
        self.closer: Closer | None = None

    async def _call(self, fn: Callable[[], T]) -> T:
        self.last_activity = time.monotonic()
        if self.env.inline_safe:
            return fn()
        return await asyncio.to_thread(fn)

    async def reset(self, data: dict[str, Any]) -> Any:
        """Reset the env from reset data (seed, episode_id, extra keys as trajectory)."""
        params = ResetData.model_validate(data)
        extra = params.model_extra or {}
        trajectory = extra.get("trajectory", extra or None)
        result = await self._call(lambda: self.env.reset(trajectory, seed=params.seed))
        self.episode_id = params.episode_id or uuid.uuid4().hex
        self.step_count = 0
        ENV_RESETS.labels(env=self.name, kind=self.kind).inc()
        return result

    async def step(self, data: dict[str, Any]) -> Any:
        """Map the action to a tool call and step the env."""
        tool_name, arguments = action_to_call(self.env, data)
        self.validators.check(tool_name, arguments)
        result = await self._call(lambda: self.env.step(tool_name, arguments))
        self.step_count += 1
        ENV_STEPS.labels(env=self.name, kind=self.kind).inc()
        return result

    def state(self) -> dict[str, Any]:
        """episode_id and step_count, then the env's own state fields."""
        self.last_activity = time.monotonic()
        return {"episode_id": self.episode_id, "step_count": self.step_count, **self.env.state()}

    async def close(self) -> None:
        """Close the env once."""
        if self.closed:
            return
        self.closed = True
        await self._call(self.env.close)


class SessionTable:
    """Counts slots across WebSocket and HTTP sessions; reaps idle ones."""

    def __init__(self, *, max_sessions: int, idle_timeout_s: float | None) -> None:
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self.sessions: dict[str, EnvSession] = {}
        self.reserved = 0

    @property
    def active(self) -> int:
        """Slots in use (reserved while an env is being built, or live)."""
        return self.reserved

    def try_reserve(self) -> bool:
        """Take a slot if one is free (single event loop, so no lock is needed)."""
        if self.reserved >= self.max_sessions:
            return False
        self.reserved += 1
        return True

    def add(self, session: EnvSession) -> None:
        """Record a live session on its reserved slot."""
        self.sessions[session.id] = session

    async def release(self, session: EnvSession | None) -> None:
        """Close the session's env and free its slot exactly once."""
        if session is not None:
            if self.sessions.pop(session.id, None) is None:
                return
            await session.close()
        self.reserved -= 1

    async def reap_idle(self, now: float | None = None) -> int:
        """Close sessions idle past the timeout (sockets included); return how many."""
        if self.idle_timeout_s is None:
            return 0
        now = time.monotonic() if now is None else now
        idle = [
            s
            for s in self.sessions.values()
            if now - s.last_activity > self.idle_timeout_s and not s.lock.locked()
        ]
        for session in idle:
            closer = session.closer
            await self.release(session)
            if closer is not None:
                await closer()
        return len(idle)
