"""APIMultiTurnRollout: the message-level rollout with the seed's constructor.

Messages in, messages out, against any OpenAI-compatible policy (through the
``Policy`` port). Stop reasons come from ``shared.schema.STOP_REASONS``
(``stop``, ``length``, ``max_turns``, ``api_error``, plus the budget reasons).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from services.rollout._facade import ToolsArg, per_trajectory_tools, run_each
from services.rollout.adapters import toolcall_parser
from services.rollout.engine import AsyncRolloutEngine
from services.rollout.ports import Policy, ToolCallParser
from services.rollout.rollout_base import Rollout
from services.rollout.traces import TraceWriter
from shared.errors import InvalidInput
from shared.schema import SamplingParams, Trajectory
from shared.schema.budgets import RolloutLimits

__all__ = ["APIMultiTurnRollout"]


class APIMultiTurnRollout(Rollout):
    """Multi-turn tool-using rollouts at the message level (data collection, evaluation)."""

    def __init__(self, api: Policy, tool_manager: ToolsArg = None,
                 sampling_params: SamplingParams | None = None, max_turns: int = 6,
                 concurrency: int = 8, extra_body: dict[str, Any] | None = None,
                 trace_dir: str | Path | None = None,
                 trace_callback: Callable[[Trajectory], bool] | None = None,
                 success_callback: Callable[[Trajectory], bool] | None = None, *,
                 parser: ToolCallParser | None = None, limits: RolloutLimits | None = None) -> None:
        sampling = sampling_params or SamplingParams()
        if sampling.n != 1:
            raise InvalidInput("APIMultiTurnRollout samples one reply per turn (n must be 1)")
        self.api, self.tool_manager, self.sampling_params = api, tool_manager, sampling
        self.limits = RolloutLimits.model_validate(
            {**(limits or RolloutLimits.unbounded()).model_dump(), "max_turns": max_turns})
        self.concurrency, self.extra_body = concurrency, dict(extra_body or {})
        # No parser given: the suite's parser (every model family), as the seed dispatches calls unasked.
        self.parser = parser or toolcall_parser()
        self.traces = (TraceWriter(trace_dir, trace_callback=trace_callback,
                                   success_callback=success_callback) if trace_dir else None)

    async def run(self, trajectories: Sequence[Trajectory | dict[str, Any]], *,
                  tool_manager: ToolsArg = None,
                  extra_body: dict[str, Any] | None = None, global_step: int = 0) -> list[Trajectory]:
        """Roll out each trajectory once; per-call ``extra_body`` is merged over the default."""
        managers = per_trajectory_tools(tool_manager or self.tool_manager, len(trajectories))
        engine = AsyncRolloutEngine(
            self.api, mode="messages", sampling_params=self.sampling_params, limits=self.limits,
            parser=self.parser, concurrency=self.concurrency,
            extra_body={**self.extra_body, **(extra_body or {})} or None, trace_writer=self.traces)
        return await run_each(engine, trajectories, managers, step=global_step)

