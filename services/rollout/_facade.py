"""What the two seed-style rollouts share: run a list of trajectories, one each, in order."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from services.rollout.engine import AsyncRolloutEngine, as_prompt
from services.rollout.ports import ToolExecutor
from shared.errors import InvalidInput
from shared.schema import Trajectory

__all__ = ["per_trajectory_tools", "run_each"]


def per_trajectory_tools(tool_manager: ToolExecutor | Sequence[ToolExecutor | None] | None,
                         count: int) -> list[ToolExecutor | None]:
    """Broadcast one executor, or check a list has one executor per trajectory."""
    if tool_manager is None or isinstance(tool_manager, ToolExecutor):
        return [tool_manager] * count
    managers = list(tool_manager)
    if len(managers) != count:
        raise InvalidInput(f"got {len(managers)} tool managers for {count} trajectories",
                           param="tool_manager")
    return managers


async def run_each(engine: AsyncRolloutEngine, trajectories: Sequence[Trajectory | dict[str, Any]],
                   managers: list[ToolExecutor | None], *, step: int) -> list[Trajectory]:
    """Run each trajectory once with its own executor; output keeps the input order."""
    if isinstance(trajectories, dict):
        raise InvalidInput("pass a list of trajectories, not one trajectory")
    prompts = [as_prompt(t) for t in trajectories]
    groups = await asyncio.gather(*(engine.run_group(p, 1, step=step, tools=m)
                                    for p, m in zip(prompts, managers, strict=True)))
    return [g.trajectories[0] for g in groups]
