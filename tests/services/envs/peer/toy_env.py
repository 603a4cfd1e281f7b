"""A counter env on the reference openenv-core server (run with uvicorn from the peer venv)."""

from __future__ import annotations

import os
from typing import Any

from openenv.core.env_server import Environment, create_app
from openenv.core.env_server.types import Action, ConcurrencyConfig, Observation, State


class CounterAction(Action):
    """Add delta to the counter."""

    delta: int


class CounterObservation(Observation):
    """Counter value and a note."""

    value: int
    text: str


class CounterState(State):
    """Episode state plus the counter."""

    value: int = 0


class CounterEnvironment(Environment):
    """Same behaviour as trajforge's counter env, on the reference server."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = CounterState()

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        start: int = 0,
        **kw: Any,
    ) -> CounterObservation:
        """Start from ``start``."""
        self._state = CounterState(episode_id=episode_id, step_count=0, value=start)
        return CounterObservation(value=start, text=f"seed={seed}", reward=0.0, done=False)

    def step(
        self, action: CounterAction, timeout_s: float | None = None, **kw: Any
    ) -> CounterObservation:
        """Add and reward the delta."""
        self._state.value += action.delta
        self._state.step_count += 1
        return CounterObservation(
            value=self._state.value, text="ok", reward=float(action.delta), done=False
        )

    @property
    def state(self) -> CounterState:
        """Current state."""
        return self._state


_MAX = int(os.environ.get("MAX_CONCURRENT_ENVS", "4"))
app = create_app(
    CounterEnvironment,
    CounterAction,
    CounterObservation,
    concurrency_config=ConcurrencyConfig(max_concurrent_envs=_MAX),
)
