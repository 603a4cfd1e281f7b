"""What the two seed-style rollouts share: run a list of trajectories, one each, in order."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from services.rollout.adapters import ToolManagerExecutor
from services.rollout.engine import AsyncRolloutEngine, as_prompt
from services.rollout.ports import ToolExecutor
from shared.errors import InvalidInput
from shared.protocols import ToolManagerLike
from shared.schema import Trajectory

__all__ = ["ToolsArg", "as_executor", "per_trajectory_tools", "run_each"]

#: What the seed-style rollouts take as ``tool_manager``: a ``ToolManager`` (as the seed
#: shows it; any ``ToolManagerLike``, matched by shape) or any ``ToolExecutor``, alone or
#: one per trajectory.
ToolsArg = ToolManagerLike | ToolExecutor | Sequence[ToolManagerLike | ToolExecutor | None] | None


def as_executor(tools: ToolManagerLike | ToolExecutor | None) -> ToolExecutor | None:
    """A ``ToolManager`` wrapped as the engine's ``ToolExecutor``; an executor as is."""
    if tools is None or isinstance(tools, ToolExecutor):
        return tools
    if isinstance(tools, ToolManagerLike):
        return ToolManagerExecutor(tools)
    raise InvalidInput(f"tool_manager must be a ToolManager or a ToolExecutor, not {type(tools).__name__}",
                       param="tool_manager")


def per_trajectory_tools(tool_manager: ToolsArg, count: int) -> list[ToolExecutor | None]:
    """Broadcast one manager/executor, or check a list has one per trajectory."""
    if tool_manager is None or isinstance(tool_manager, (ToolManagerLike, ToolExecutor)):
        return [as_executor(tool_manager)] * count
    managers = [as_executor(m) for m in tool_manager]
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
