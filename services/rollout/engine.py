"""AsyncRolloutEngine: groups of trajectories with no turn barrier.

Every trajectory is its own asyncio task and sends one request per turn to the
policy under a shared concurrency cap (what a continuously batching server
wants); tool execution happens outside the cap, so it overlaps other
trajectories' inference. A group returns as soon as ``group_size`` members
have finished; with over-sampling (``oversample=k``) the remaining members are
cancelled and recorded as cut, with the reason, so length bias can be measured.
A policy with ``for_trajectory`` (``GatewayPolicy``) is bound to each trajectory, so
each one calls under its own gateway session.
With ``relaunch`` (spares per member started, ``services.rollout.relaunch``)
a slot that would go idle starts a spare member for a group down to its
stragglers; the same first-finished rule decides which members are kept.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Literal, cast

from pydantic import BaseModel, Field

from services.rollout.bridge import TokenBridge
from services.rollout.episode import Episode, EpisodeContext
from services.rollout.ports import Policy, ToolCallParser, ToolExecutor
from services.rollout.relaunch import Candidate, RelaunchCost, RelaunchPolicy
from services.rollout.schedule import DEFAULT_SCHEDULE, Schedule, Scheduler
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
    spare: bool = False  # a relaunched spare (services.rollout.relaunch) rather than an original member


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
                 trace_writer: TraceWriter | None = None, schedule: Schedule = DEFAULT_SCHEDULE,
                 relaunch: float = 0.0, relaunch_stragglers: int = 2) -> None:
        if mode == "tokens" and bridge is None:
            raise InvalidInput("token mode needs a TokenBridge (the model's chat template)")
        if concurrency < 1 or oversample < 0:
            raise InvalidInput("concurrency must be >= 1 and oversample >= 0")
        limits = limits or RolloutLimits()
        self.mode, self.bridge, self.tools, self.oversample = mode, bridge, tools, oversample
        self.trace_writer = trace_writer
        self.relaunch = RelaunchPolicy(relaunch, relaunch_stragglers)
        self.relaunch_cost = RelaunchCost()
        self._groups: dict[str, _GroupRun] = {}  # by _GroupRun.key: the groups running now
        self._run_ids = itertools.count()
        self._relaunch_pending = False
        slots = PrioritySlots(concurrency, on_idle=self._slot_idle if self.relaunch.enabled else None)
        self.ctx = EpisodeContext(policy=policy, sampling=sampling_params or SamplingParams(),
                                  limits=limits, parser=parser, slots=slots, extra_body=extra_body,
                                  scheduler=Scheduler(schedule, max_turns=limits.max_turns))

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
        """Run ``group_size + oversample`` members (and spares, with relaunch); keep the first
        ``group_size`` finished."""
        if group_size < 1:
            raise InvalidInput("group_size must be >= 1", param="group_size")
        source = self.tools if isinstance(tools, str) else tools
        run = _GroupRun(self, prompt, f"{prompt.id}:g{step}", group_size, source)
        self._groups[run.key] = run
        try:
            for member in range(group_size + self.oversample):
                run.start(member)
            self.relaunch.members += group_size + self.oversample
            order = await run.first_finished()
        finally:
            del self._groups[run.key]
            await _cancel_all(list(run.tasks))
            self.ctx.scheduler.group_done(run.group_id)
        result = _assemble(run.group_id, prompt.id, run.episodes, order, group_size)
        self._count_cost(run, result)
        self._write_traces(result, step)
        return result

    def _slot_idle(self) -> None:
        """A slot went idle: look for a straggler to relaunch once the current step is done."""
        if not self._relaunch_pending and self.relaunch.allowed():
            self._relaunch_pending = True
            asyncio.get_running_loop().call_soon(self._relaunch_stragglers)

    def _relaunch_stragglers(self) -> None:
        """Start spares into the idle slots, most urgent straggler first, within the budget."""
        self._relaunch_pending = False
        now = asyncio.get_running_loop().time()
        for _ in range(self.ctx.slots.idle):
            candidates = (run.candidate(now) for run in self._groups.values() if run.in_tail())
            pick = self.relaunch.pick(c for c in candidates if c is not None)
            if pick is None:
                return
            self._groups[pick.group].start_spare()

    def _count_cost(self, run: _GroupRun, result: GroupResult) -> None:
        cost = self.relaunch_cost
        cut = {c.member for c in result.cut}
        for ep in run.episodes:
            att = ep.attained
            if ep.spare:
                cost.spare_policy_calls += att.policy_calls
                cost.spare_completion_tokens += att.completion_tokens
                cost.spares_kept += ep.trajectory.sample_index not in cut
            if ep.trajectory.sample_index in cut:
                cost.cut_policy_calls += att.policy_calls
                cost.cut_completion_tokens += att.completion_tokens
        cost.spares = self.relaunch.spares

    def _episode(self, prompt: Trajectory, group_id: str, member: int, source: ToolsSource,
                 *, spare_for: int | None = None) -> Episode:
        traj = prompt.model_copy(deep=True)
        traj.id, traj.group_id, traj.sample_index = f"{prompt.id}-{member}", group_id, member
        traj.metadata = {**traj.metadata, "prompt_id": prompt.id}
        if spare_for is not None:  # relaunched for a straggler: the bias of keeping it is measurable
            traj.metadata.update(spare=True, spare_for=spare_for)
        tools = _tools_for(source, traj)
        tool_infos = [t.model_dump(mode="json") for t in traj.tools] or (
            tools.tool_infos() if tools is not None else [])
        traj.tools = [ToolInfo.model_validate(t) for t in tool_infos]
        messages = [m.to_openai() for m in traj.messages]
        episode = Episode(self.ctx, self._transcript(messages, tool_infos), traj, tools, policy=self._policy_for(traj))
        episode.spare = spare_for is not None
        return episode

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
        """Counters across all runs: turns, policy calls, completion tokens, milliseconds requests waited
        for a slot, and what relaunching cost (``spares``, ``spare_*``, ``cut_*``: see ``RelaunchCost``)."""
        return {**self.ctx.stats, **self.relaunch_cost.model_dump()}


def _tools_for(source: ToolsSource, traj: Trajectory) -> ToolExecutor | None:
    if source is None or isinstance(source, ToolExecutor):
        return source
    return source(traj)


class _GroupRun:
    """One group's members as they run: started, spares added later, finished ones in order."""

    def __init__(self, engine: AsyncRolloutEngine, prompt: Trajectory, group_id: str, group_size: int,
                 source: ToolsSource) -> None:
        self.engine, self.prompt, self.group_id, self.group_size = engine, prompt, group_id, group_size
        self.source = source
        self.key = f"{group_id}#{next(engine._run_ids)}"  # unique even if a prompt runs twice at once
        self.episodes: list[Episode] = []
        self.tasks: list[asyncio.Task[Trajectory]] = []
        self.done: asyncio.Queue[Episode] = asyncio.Queue()
        self.finished = 0  # members whose run returned

    def start(self, member: int, *, spare_for: int | None = None) -> None:
        """Create member ``member``'s episode and run it."""
        ep = self.engine._episode(self.prompt, self.group_id, member, self.source, spare_for=spare_for)
        task = asyncio.create_task(ep.run())
        task.add_done_callback(lambda _t: self._member_done(ep))
        self.episodes.append(ep)
        self.tasks.append(task)

    def _member_done(self, ep: Episode) -> None:
        self.finished += 1
        self.done.put_nowait(ep)
        self.engine._slot_idle()  # the group may be down to its stragglers now

    def in_tail(self) -> bool:
        """Whether few enough members are left for a spare to be worth considering."""
        return self.group_size - self.finished <= self.engine.relaunch.stragglers

    def candidate(self, now: float) -> Candidate | None:
        """What the relaunch policy needs to know about this group now; None if it cannot qualify
        (the rule's keys, the costly part, are computed only for groups that can)."""
        running = [ep for ep in self.episodes if not ep.finished]
        c = Candidate(group=self.key, needed=self.group_size - (len(self.episodes) - len(running)),
                      running=len(running), spares=sum(ep.spare for ep in running), key=0.0)
        if not self.engine.relaunch.qualifies(c):
            return None
        return dataclasses.replace(c, key=min(ep.priority(now) for ep in running))

    def start_spare(self) -> None:
        """Start one spare for the running member the rule ranks most urgent."""
        now = asyncio.get_running_loop().time()
        straggler = min((ep for ep in self.episodes if not ep.finished), key=lambda ep: ep.priority(now))
        self.start(max(ep.trajectory.sample_index for ep in self.episodes) + 1,
                   spare_for=straggler.trajectory.sample_index)

    async def first_finished(self) -> list[Episode]:
        """Wait until ``group_size`` members finished; returns them in finishing order."""
        order: list[Episode] = []
        while len(order) < self.group_size:  # every task reports once, and there are group_size or more
            batch = [await self.done.get()]
            while not self.done.empty():
                batch.append(self.done.get_nowait())
            order.extend(sorted(batch, key=lambda ep: ep.trajectory.sample_index))
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
                                    turns=ep.trajectory.turns, spare=ep.spare))
    return result
