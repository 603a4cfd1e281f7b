"""One trajectory's turn loop: sample, parse, run tools, repeat, within budgets.

A failed episode is data: errors from the shared tree end the trajectory with
a stop reason and are recorded on it; timeouts and cancellation keep what was
produced so far. Only the policy call holds a slot of the concurrency cap, so
tool execution of one trajectory overlaps inference of the others. Waiting
requests are ordered by the context's scheduler (``services.rollout.schedule``),
which the episode tells as its policy calls, tool phases and turns end (the
``estimate`` rule learns remaining work from that).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from services.rollout.ports import ParsedCall, Policy, PolicyOutput, ToolCallParser, ToolExecutor
from services.rollout.schedule import Attained, Scheduler
from services.rollout.slots import PrioritySlots
from services.rollout.tool_calls import attempted_calls, execute_calls, tool_message
from services.rollout.transcript import Transcript
from shared.errors import (
    EpisodeError,
    ToolExecutionError,
    TrajforgeError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from shared.schema import Message, SamplingParams, StepRecord, Trajectory
from shared.schema.budgets import RolloutLimits

__all__ = ["Episode", "EpisodeContext"]

_log = logging.getLogger(__name__)
_RETRYABLE = (UpstreamUnavailable, UpstreamTimeout)


@dataclass
class EpisodeContext:
    """Everything an episode shares with its siblings: policy, cap, budgets."""

    policy: Policy
    sampling: SamplingParams
    limits: RolloutLimits
    slots: PrioritySlots
    parser: ToolCallParser | None = None
    extra_body: dict[str, Any] | None = None
    scheduler: Scheduler = field(default_factory=Scheduler)
    stats: dict[str, int] = field(default_factory=lambda: {"turns": 0, "policy_calls": 0, "completion_tokens": 0,
                                                           "queued_ms": 0})


class _Ended(Exception):
    """Internal signal: the loop reached a stop reason."""

    def __init__(self, reason: str, truncated: bool) -> None:
        super().__init__(reason)
        self.reason, self.truncated = reason, truncated


def _now() -> float:
    """The event loop's clock: queueing and service seconds are measured on the clock timers run on."""
    return asyncio.get_running_loop().time()


def _stop_reason_for(exc: TrajforgeError) -> str:
    if isinstance(exc, ToolExecutionError | EpisodeError):
        return "tool_error"
    return "api_error"


class Episode:
    """Runs one trajectory; ``trajectory`` is complete even if the run is cancelled."""

    def __init__(self, ctx: EpisodeContext, transcript: Transcript, traj: Trajectory,
                 tools: ToolExecutor | None, *, policy: Policy | None = None) -> None:
        self.ctx, self.transcript, self.trajectory, self.tools = ctx, transcript, traj, tools
        #: The context's policy, or one bound to this trajectory (its own gateway session).
        self.policy = policy or ctx.policy
        self.steps: list[StepRecord] = []
        self.turns = 0
        self.attained = Attained()
        self.finished = False
        self.spare = False  # a relaunched spare (services.rollout.relaunch)

    def priority(self, now: float) -> float:
        """The scheduler's key for this trajectory now (lower is more urgent)."""
        traj = self.trajectory
        return self.ctx.scheduler.key(traj.group_id or "", traj.sample_index or 0, self.attained, now)

    async def run(self) -> Trajectory:
        """Run to a stop reason; cancellation is recorded and then propagated."""
        reason, truncated = "stop", False
        error: BaseException | None = None
        try:
            async with asyncio.timeout(self.ctx.limits.timeout_s):
                start = getattr(self.tools, "astart", None)
                if start is not None:  # an executor holding a per-trajectory session opens it here
                    await start()
                await self._loop()
        except _Ended as end:
            reason, truncated = end.reason, end.truncated
        except TimeoutError:
            reason, truncated = "timeout", True
        except asyncio.CancelledError:
            self._finish("cancelled", True, None)  # not a turn count the scheduler learns from
            await self._close_tools()
            raise
        except TrajforgeError as exc:
            reason, truncated, error = _stop_reason_for(exc), True, exc
        except Exception as exc:  # noqa: BLE001 - a bug in an adapter must not sink the group: keep it as data
            _log.exception("unexpected error in trajectory %s", self.trajectory.id)
            reason, truncated, error = "api_error", True, exc
        self._finish(reason, truncated, error)
        if self.turns:  # one that never got an answer says nothing about how long answers take
            self._observe_turn(finished=True)
        await self._close_tools()
        return self.trajectory

    async def _close_tools(self) -> None:
        """End the executor's per-trajectory session, if it has one (bounded, never raises)."""
        close = getattr(self.tools, "aclose", None)
        if close is None:
            return
        with contextlib.suppress(Exception):
            await asyncio.shield(asyncio.wait_for(close(), 5.0))

    async def _loop(self) -> None:
        limits = self.ctx.limits
        while True:
            budget = self._turn_budget()
            started = time.perf_counter()
            out = await self._call_policy(budget)
            self.turns += 1
            self.ctx.stats["turns"] += 1
            calls = attempted_calls(out, self.ctx.parser, turn=self.turns)
            self.transcript.add_assistant(out, calls)
            step = self._record_step(out, calls, started)
            self._check_after_sample(out, calls)
            if self.turns >= limits.max_turns:
                raise _Ended("max_turns", True)
            self._observe_turn(finished=False)
            await self._apply_tools(calls, out, step)
            fatal = getattr(self.tools, "fatal_error", None)
            if fatal is not None:  # the executor lost its session (see services.rollout.remote)
                raise fatal
            if getattr(self.tools, "episode_done", False):  # the env ended the episode (see ToolExecutor)
                raise _Ended("stop", False)
            if limits.max_total_tokens and self.transcript.total_tokens() >= limits.max_total_tokens:
                raise _Ended("max_total_tokens", True)

    def _turn_budget(self) -> int | None:
        """Tokens this turn may sample, checked before the call (never after)."""
        limits = self.ctx.limits
        budget = limits.max_tokens_per_turn or self.ctx.sampling.max_tokens
        if limits.max_total_tokens is not None:
            left = limits.max_total_tokens - self.transcript.total_tokens()
            if left <= 0:
                raise _Ended("max_total_tokens", True)
            budget = left if budget is None else min(budget, left)
        return budget

    async def _call_policy(self, budget: int | None) -> PolicyOutput:
        sampling = self.ctx.sampling
        update: dict[str, Any] = {}
        if budget is not None and budget != sampling.max_tokens:
            update["max_tokens"] = budget
        if sampling.seed is not None:
            # One job seed, a distinct stream per member and turn: identical members carry no signal.
            update["seed"] = sampling.seed + 7919 * (self.trajectory.sample_index or 0) + self.turns
        if update:
            sampling = sampling.model_copy(update=update)
        for attempt in range(self.ctx.limits.max_api_retries + 1):
            try:
                async with self._slot():
                    self.ctx.stats["policy_calls"] += 1
                    self.attained.policy_calls += 1
                    out = await self.transcript.sample(self.policy, sampling, self.ctx.extra_body)
                    self.attained.completion_tokens += len(out.token_ids)
                    self.ctx.stats["completion_tokens"] += len(out.token_ids)
                    return out
            except _RETRYABLE:
                if attempt >= self.ctx.limits.max_api_retries:
                    raise
            await asyncio.sleep(self.ctx.limits.retry_backoff_s * 2**attempt)
        raise AssertionError("unreachable")

    @contextlib.asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        """Hold a slot of the cap; account queueing and service time for the scheduling rule."""
        att = self.attained
        arrived = _now()
        async with self.ctx.slots.slot(self.priority(arrived)):
            granted = _now()
            att.waited_s += granted - arrived
            self.ctx.stats["queued_ms"] += round((granted - arrived) * 1000)
            try:
                yield
            finally:
                served = _now() - granted
                att.service_s, att.policy_s = att.service_s + served, att.policy_s + served
            self.ctx.scheduler.policy_done(served)  # answered calls only: a cancelled one is no latency

    def _check_after_sample(self, out: PolicyOutput, calls: list[ParsedCall]) -> None:
        limits = self.ctx.limits
        if out.finish_reason == "length":
            spent = (limits.max_total_tokens is not None
                     and self.transcript.total_tokens() >= limits.max_total_tokens)
            raise _Ended("max_total_tokens" if spent else "length", True)
        if not calls:
            raise _Ended("stop", False)
        if limits.parse_failure_policy == "end" and not all(c.ok for c in calls):
            self.trajectory.metadata["error_code"] = "parse_error"
            raise _Ended("tool_error", True)

    async def _apply_tools(self, calls: list[ParsedCall], out: PolicyOutput, step: StepRecord) -> None:
        started = _now()
        try:
            results = await execute_calls(calls, self.tools, self.ctx.limits)
        finally:
            self._observe_tools(calls, _now() - started)
        messages = [tool_message(c, r) for c, r in zip(calls, results, strict=True)]
        self.transcript.add_observations(messages, out)
        step.observations = [r.content for r in results]
        env_rewards = [r.reward for r in results if r.reward is not None]
        if env_rewards:  # per-step rewards from the env feed per-step GRPO (services.rollout.scoring)
            step.reward = float(sum(env_rewards))
        step.tool_statuses = [{"ok": r.ok, "error_type": r.error_type} for r in results]  # type: ignore[attr-defined]

    def _observe_turn(self, *, finished: bool) -> None:
        self.attained.turns = self.turns
        traj = self.trajectory
        self.ctx.scheduler.turn_done(traj.group_id or "", traj.sample_index or 0, self.turns, finished=finished)

    def _observe_tools(self, calls: list[ParsedCall], seconds: float) -> None:
        att = self.attained
        att.service_s, att.tool_s, att.tool_calls = att.service_s + seconds, att.tool_s + seconds, att.tool_calls + 1
        att.tool = calls[0].name if calls else None
        self.ctx.scheduler.tool_done(att.tool, seconds)

    def _record_step(self, out: PolicyOutput, calls: list[ParsedCall], started: float) -> StepRecord:
        step = StepRecord(turn=self.turns, prompt_tokens=out.prompt_tokens,
                          completion_tokens=len(out.token_ids), finish_reason=out.finish_reason,
                          tool_calls=[c.model_dump() for c in calls],
                          parse_statuses=[c.status for c in calls],
                          latency_s=time.perf_counter() - started)
        self.steps.append(step)
        return step

    def _finish(self, reason: str, truncated: bool, error: BaseException | None) -> None:
        traj = self.trajectory
        traj.messages = [Message.model_validate(m) for m in self.transcript.messages]
        traj.turns, traj.stop_reason, traj.truncated = self.turns, reason, truncated  # type: ignore[assignment]
        traj.steps, traj.tokens = self.steps, self.transcript.token_data()
        if error is not None:
            code = error.code if isinstance(error, TrajforgeError) else "internal_error"
            traj.metadata.update(error=f"{type(error).__name__}: {error}", error_code=code)
        self.finished = True
