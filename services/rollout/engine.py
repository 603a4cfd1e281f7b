"""AsyncRolloutEngine: groups of trajectories with no turn barrier.

Every trajectory is its own asyncio task and sends one request per turn to the
policy under a shared concurrency cap (what a continuously batching server
wants); tool execution happens outside the cap, so it overlaps other
trajectories' inference. A group returns as soon as ``group_size`` members
have finished; with over-sampling (``oversample=k``) the remaining members are
cancelled and recorded as cut, with the reason, so length bias can be measured.
A policy with ``for_trajectory`` (``GatewayPolicy``) is bound to each trajectory, so
each one calls under its own gateway session.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Literal, cast

from pydantic import BaseModel, Field

from services.rollout.bridge import TokenBridge
from services.rollout.episode import Episode, EpisodeContext
from services.rollout.ports import Policy, ToolCallParser, ToolExecutor
from services.rollout.schedule import SCHEDULES, Schedule
from services.rollout.slots import PrioritySlots
from services.rollout.traces import TraceWriter
from services.rollout.transcript import MessageTranscript, TokenTranscript, Transcript
from shared.errors import InvalidInput
from shared.schema import SamplingParams, ToolInfo, Trajectory
from shared.schema.budgets import RolloutLimits

__all__ = ["AsyncRolloutEngine", "CutMember", "GroupResult", "RolloutMode", "ToolsSource", "as_prompt"]

RolloutMode = Literal["messages", "tokens"]
ToolsSource = ToolExecutor | Callable[[Trajectory], ToolExecutor | None] | None
"""One shared executor, or a factory called once per trajectory (stateful tools)."""


CutReason = Literal["surplus_finished", "unfinished_when_group_full"]


class CutMember(BaseModel):
    """A group member dropped by over-sampling, and why."""

    member: int
    trajectory_id: str
    reason: CutReason
    stop_reason: str | None = None
    turns: int = 0


class GroupResult(BaseModel):
    """The kept members of one prompt's group, plus the members that were cut."""

    group_id: str
    prompt_id: str
    trajectories: list[Trajectory] = Field(default_factory=list)
    cut: list[CutMember] = Field(default_factory=list)


def as_prompt(prompt: Trajectory | dict[str, Any]) -> Trajectory:
    """Validate one prompt; a prompt without a user turn is refused up front."""
    traj = prompt if isinstance(prompt, Trajectory) else Trajectory.model_validate(prompt)
    if not any(m.role == "user" for m in traj.messages):
        raise InvalidInput(f"prompt {traj.id} has no user turn", param="messages")
    return traj


class AsyncRolloutEngine:
    """Collects groups of multi-turn trajectories from one policy, within explicit budgets."""

    def __init__(self, policy: Policy, *, tools: ToolsSource = None, mode: RolloutMode = "messages",
                 bridge: TokenBridge | None = None, sampling_params: SamplingParams | None = None,
                 limits: RolloutLimits | None = None, parser: ToolCallParser | None = None,
                 concurrency: int = 64, oversample: int = 0, extra_body: dict[str, Any] | None = None,
                 trace_writer: TraceWriter | None = None, schedule: Schedule = "turns") -> None:
        if mode == "tokens" and bridge is None:
            raise InvalidInput("token mode needs a TokenBridge (the model's chat template)")
        if concurrency < 1 or oversample < 0:
            raise InvalidInput("concurrency must be >= 1 and oversample >= 0")
        if schedule not in SCHEDULES:
            raise InvalidInput(f"schedule must be one of {', '.join(SCHEDULES)}", param="schedule")
        self.mode, self.bridge, self.tools, self.oversample = mode, bridge, tools, oversample
        self.trace_writer = trace_writer
        self.ctx = EpisodeContext(policy=policy, sampling=sampling_params or SamplingParams(),
                                  limits=limits or RolloutLimits(), parser=parser,
                                  slots=PrioritySlots(concurrency), extra_body=extra_body,
                                  schedule=schedule)

    async def collect_batch(self, prompts: Sequence[Trajectory | dict[str, Any]], group_size: int = 8,
                            *, step: int = 0) -> list[GroupResult]:
        """Roll out every prompt ``group_size`` times; groups come back in prompt order."""
        trajs = [as_prompt(p) for p in prompts]
        return list(await asyncio.gather(*(self.run_group(t, group_size, step=step) for t in trajs)))

    async def stream_groups(self, prompts: Sequence[Trajectory | dict[str, Any]], group_size: int = 8,
                            *, step: int = 0) -> AsyncIterator[GroupResult]:
        """Yield groups as they complete (a trainer can start on the first ones)."""
        trajs = [as_prompt(p) for p in prompts]
        tasks = [asyncio.create_task(self.run_group(t, group_size, step=step)) for t in trajs]
        try:
            for next_done in asyncio.as_completed(tasks):
                yield await next_done
        finally:
            await _cancel_all(tasks)

    async def run_group(self, prompt: Trajectory, group_size: int, *, step: int = 0,
                        tools: ToolsSource | Literal["default"] = "default") -> GroupResult:
        """Run ``group_size + oversample`` members; keep the first ``group_size`` finished."""
        if group_size < 1:
            raise InvalidInput("group_size must be >= 1", param="group_size")
        group_id = f"{prompt.id}:g{step}"
        source = self.tools if isinstance(tools, str) else tools
        episodes = [self._episode(prompt, group_id, m, source)
                    for m in range(group_size + self.oversample)]
        tasks = {asyncio.create_task(ep.run()): ep for ep in episodes}
        try:
            order = await _first_finished(tasks, group_size)
        finally:
            await _cancel_all(list(tasks))
        result = _assemble(group_id, prompt.id, episodes, order, group_size)
        self._write_traces(result, step)
        return result

    def _episode(self, prompt: Trajectory, group_id: str, member: int, source: ToolsSource
                 ) -> Episode:
        traj = prompt.model_copy(deep=True)
        traj.id, traj.group_id, traj.sample_index = f"{prompt.id}-{member}", group_id, member
        traj.metadata = {**traj.metadata, "prompt_id": prompt.id}
        tools = _tools_for(source, traj)
        tool_infos = [t.model_dump(mode="json") for t in traj.tools] or (
            tools.tool_infos() if tools is not None else [])
        traj.tools = [ToolInfo.model_validate(t) for t in tool_infos]
        messages = [m.to_openai() for m in traj.messages]
        return Episode(self.ctx, self._transcript(messages, tool_infos), traj, tools, policy=self._policy_for(traj))

    def _policy_for(self, traj: Trajectory) -> Policy:
        """The policy bound to one trajectory when it offers that (a gateway session per trajectory)."""
        bind = getattr(self.ctx.policy, "for_trajectory", None)
        return self.ctx.policy if bind is None else cast(Policy, bind(traj))

    def _transcript(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Transcript:
        if self.mode == "tokens":
            assert self.bridge is not None
            return TokenTranscript(messages, tools, self.bridge)
        return MessageTranscript(messages, tools)

    def _write_traces(self, result: GroupResult, step: int) -> None:
        if self.trace_writer is not None:
            for traj in result.trajectories:
                self.trace_writer.write(traj, step=step)

    @property
    def stats(self) -> dict[str, int]:
        """Counters across all runs: turns, policy calls, milliseconds requests waited for a slot."""
        return dict(self.ctx.stats)


def _tools_for(source: ToolsSource, traj: Trajectory) -> ToolExecutor | None:
    if source is None or isinstance(source, ToolExecutor):
        return source
    return source(traj)


async def _first_finished(tasks: dict[asyncio.Task[Trajectory], Episode], needed: int) -> list[Episode]:
    """Wait until ``needed`` members finished; returns them in finishing order."""
    pending: set[asyncio.Task[Trajectory]] = set(tasks)
    order: list[Episode] = []
    while pending and len(order) < needed:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        order.extend(sorted((tasks[t] for t in done), key=lambda ep: ep.trajectory.sample_index))
    return order


async def _cancel_all(tasks: Sequence[asyncio.Task[Any]]) -> None:
    """Cancel what is still running and wait, so cancellation reaches in-flight calls."""
    for task in tasks:
        if not task.done():
            task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _assemble(group_id: str, prompt_id: str, episodes: list[Episode], order: list[Episode],
              group_size: int) -> GroupResult:
    kept = order[:group_size]
    kept_ids = {id(ep) for ep in kept}
    kept_sorted = sorted(kept, key=lambda e: e.trajectory.sample_index)
    result = GroupResult(group_id=group_id, prompt_id=prompt_id,
                         trajectories=[ep.trajectory for ep in kept_sorted])
    for ep in episodes:
        if id(ep) in kept_ids:
            continue
        reason: CutReason = "surplus_finished" if ep in order else "unfinished_when_group_full"
        if not ep.finished:  # cancelled before its first await: nothing ran, say so
            ep.trajectory.stop_reason, ep.trajectory.truncated = "cancelled", True
        ep.trajectory.metadata["cut"] = reason
        result.cut.append(CutMember(member=ep.trajectory.sample_index, trajectory_id=ep.trajectory.id,
                                    reason=reason, stop_reason=ep.trajectory.stop_reason,
                                    turns=ep.trajectory.turns))
    return result
