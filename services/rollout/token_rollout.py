"""MultiTurnRollout: the token-level rollout with the seed's constructor.

Output trajectories carry ``tokens`` (``shared.schema.TokenData``): the prompt
ids, then the sampled ids verbatim (loss mask 1, logprobs aligned) and the
template bridges between turns (loss mask 0, no logprobs); ``labels`` derived
from it put -100 on every token the policy did not sample. History is never
re-tokenised: only the initial prompt and each bridge delta are rendered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from services.rollout._facade import ToolsArg, per_trajectory_tools, run_each
from services.rollout.adapters import toolcall_parser
from services.rollout.bridge import TokenBridge
from services.rollout.engine import AsyncRolloutEngine
from services.rollout.ports import ChatTokenizer, Policy, ToolCallParser
from services.rollout.rollout_base import Rollout
from services.rollout.traces import TraceWriter
from shared.errors import InvalidInput
from shared.schema import SamplingParams, Trajectory
from shared.schema.budgets import RolloutLimits

__all__ = ["MultiTurnRollout"]


class MultiTurnRollout(Rollout):
    """Multi-turn tool-using rollouts at the token level (for RL training)."""

    def __init__(self, sampler: Policy, template: TokenBridge | ChatTokenizer,
                 tool_manager: ToolsArg = None,
                 sampling_params: SamplingParams | None = None, max_turns: int = 6,
                 max_trajectory_tokens: int | None = None, trace_dir: str | Path | None = None,
                 trace_callback: Callable[[Trajectory], bool] | None = None,
                 success_callback: Callable[[Trajectory], bool] | None = None, *,
                 parser: ToolCallParser | None = None, limits: RolloutLimits | None = None,
                 concurrency: int = 64) -> None:
        if template is None:
            raise InvalidInput("MultiTurnRollout needs the model's chat template (a tokenizer)")
        sampling = sampling_params or SamplingParams()
        if sampling.n != 1:
            raise InvalidInput("MultiTurnRollout samples one continuation per turn (n must be 1)")
        self.sampler, self.tool_manager, self.sampling_params = sampler, tool_manager, sampling
        self.bridge = template if isinstance(template, TokenBridge) else TokenBridge(template)
        self.limits = RolloutLimits.model_validate(
            {**(limits or RolloutLimits.unbounded()).model_dump(), "max_turns": max_turns,
             "max_total_tokens": max_trajectory_tokens})
        self.parser, self.concurrency = parser or toolcall_parser(), concurrency
        self.traces = (TraceWriter(trace_dir, trace_callback=trace_callback,
                                   success_callback=success_callback) if trace_dir else None)

    async def run(self, trajectories: Sequence[Trajectory | dict[str, Any]], *,
                  tool_manager: ToolsArg = None,
                  sampling_params: SamplingParams | None = None, global_step: int = 0
                  ) -> list[Trajectory]:
        """Roll out each trajectory once; output keeps the input order."""
        managers = per_trajectory_tools(tool_manager or self.tool_manager, len(trajectories))
        engine = AsyncRolloutEngine(
            self.sampler, mode="tokens", bridge=self.bridge,
            sampling_params=sampling_params or self.sampling_params, limits=self.limits,
            parser=self.parser, concurrency=self.concurrency, trace_writer=self.traces)
        return await run_each(engine, trajectories, managers, step=global_step)

