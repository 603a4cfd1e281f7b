"""``Rollout``: the seed's base class of every rollout (a list of trajectories in, as many out)."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Coroutine, Sequence
from typing import Any

from shared.schema import Trajectory

__all__ = ["Rollout"]


class Rollout(ABC):
    """Takes trajectories and returns the same number, with messages, turns, stop_reason, truncated.

    ``rollout(trajectories)`` is synchronous when no event loop runs in this thread (as the seed
    calls it); inside a running loop it returns the coroutine, so ``await rollout(...)`` works too.
    ``run`` is the async form either way.
    """

    @abstractmethod
    async def run(self, *args: Any, **kwargs: Any) -> list[Trajectory]:
        """Override as ``run(trajectories, **options)``: roll out each; output keeps the input order."""

    def __call__(self, trajectories: Sequence[Trajectory | dict[str, Any]], **kwargs: Any
                 ) -> list[Trajectory] | Coroutine[Any, Any, list[Trajectory]]:
        """Blocking outside an event loop; an awaitable inside one."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(trajectories, **kwargs))
        return self.run(trajectories, **kwargs)
