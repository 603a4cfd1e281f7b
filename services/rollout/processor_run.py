"""Groups run by a user rollout processor, each member on its own gateway session.

Every member gets a ``RolloutInput`` whose ``base_url`` is a gateway session URL
(``rollout-<job>-<task>-<member>-<attempt>``). Whatever the processor does
there, each policy call is captured by the gateway with the engine's own token
ids; once the processor returns, the member's trajectory is built from those
traces by ``merge_session``, never by re-tokenising the processor's text. A
session that split into several segments (a client that re-rendered history)
keeps the first segment's tokens and records how many breaks there were and
why. A processor that raised or timed out yields its ``ROLLOUT_ERROR:``
fallback, stored as a failed member (``api_error``), and the group goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.rollout.build import check_processor_module
from services.rollout.engine import GroupResult
from services.rollout.gateway_link import GatewayLink, open_gateway_link, session_id_for
from services.rollout.processors import ProcessorRuntime, ProcessorSpec
from services.rollout.remote import ServiceLink
from shared.errors import TrajforgeError
from shared.schema import Message, SamplingParams, Trajectory
from shared.schema.budgets import RolloutLimits
from shared.schema.functions import (
    ModelResource,
    RolloutFunctionComponent,
    RolloutInput,
    RolloutOutput,
    rollout_error_output,
)
from shared.settings import Settings
from shared.traces import SessionMerge, merge_session

__all__ = ["ProcessorGroups", "member_trajectory", "open_function_groups", "open_processor_groups"]


#: Runs one member's input: an in-process processor runtime, or a call to a function component.
ProcessFn = Callable[[RolloutInput], Awaitable[RolloutOutput]]


class ProcessorGroups:
    """Runs groups through one processor (in-process or a function component); the engine's stand-in."""

    mode = "tokens"

    def __init__(self, process: ProcessFn, link: GatewayLink, *, window: int, job_id: uuid.UUID,
                 model: str | None, attempt: int = 0, sampling: SamplingParams | None = None,
                 limits: RolloutLimits | None = None) -> None:
        self.process_fn, self.link, self.job_id, self.model, self.attempt = process, link, job_id, model, attempt
        self.limits = limits or RolloutLimits()
        self.sampling = _sampling_fields(sampling or SamplingParams(), self.limits)
        # The runner refuses (or queues remotely) work beyond its capacity; queue here, so no member is refused.
        self._window = asyncio.Semaphore(window)

    async def run_group(self, prompt: Trajectory, group_size: int) -> GroupResult:
        """Run ``group_size`` members of one prompt concurrently; every member comes back as data."""
        group_id = f"{prompt.id}:g0"
        members = await asyncio.gather(*(self._member(prompt, group_id, m) for m in range(group_size)))
        return GroupResult(group_id=group_id, prompt_id=prompt.id, trajectories=list(members))

    async def _member(self, prompt: Trajectory, group_id: str, member: int) -> Trajectory:
        session_id = session_id_for(self.job_id, prompt.id, member, self.attempt)
        key = await self.link.session_key(session_id)
        inp = self._input(prompt, member, session_id, key)
        out = await self._process(inp)
        try:
            merged = merge_session(session_id, await self.link.traces(session_id))
        except httpx.HTTPError as exc:  # the trajectory cannot be assembled: record why, keep the group
            out = _unreadable(inp, out, exc)
            merged = SessionMerge(session_id=session_id)
        traj = member_trajectory(prompt, member, session_id, out, merged)
        traj.group_id = group_id
        return traj

    def _input(self, prompt: Trajectory, member: int, session_id: str, api_key: str) -> RolloutInput:
        inp = RolloutInput(
            id=f"{prompt.id}-{member}", messages=[m.to_openai() for m in prompt.messages],
            tools=[t.model_dump(mode="json", exclude_none=True) for t in prompt.tools],
            ground_truth=prompt.metadata.get("ground_truth"), metadata=dict(prompt.metadata),
            rollout_extra=dict(prompt.metadata),
            model_resource=ModelResource(model_name=self.model or "", base_url=self.link.session_url(session_id),
                                         api_key=api_key),
            sampling_params=dict(self.sampling), limits=self.limits.model_dump(mode="json"))
        return inp.with_http_client(self.link.http_client())

    async def _process(self, inp: RolloutInput) -> RolloutOutput:
        try:
            async with self._window:
                return await self.process_fn(inp)
        finally:
            if inp.http_client is not None:
                await inp.http_client.aclose()


def _sampling_fields(sampling: SamplingParams, limits: RolloutLimits) -> dict[str, Any]:
    """The job's sampling as request fields, capped by its limits, with the member's timeout."""
    fields = {k: v for k, v in sampling.to_openai().items() if k != "n"}
    cap = limits.max_tokens_per_turn
    if sampling.max_tokens is not None and cap is not None:
        fields["max_tokens"] = min(sampling.max_tokens, cap)
    else:  # ``None`` is "no limit": whichever of the two is set
        fields["max_tokens"] = sampling.max_tokens if sampling.max_tokens is not None else cap
    if limits.timeout_s is not None:
        fields["timeout"] = limits.timeout_s
    return fields


def _unreadable(inp: RolloutInput, out: RolloutOutput, exc: Exception) -> RolloutOutput:
    failed = rollout_error_output(inp, f"gateway traces unreadable: {type(exc).__name__}: {exc}")
    failed.agent_output.rollout_metrics = out.agent_output.rollout_metrics
    return failed


def member_trajectory(prompt: Trajectory, member: int, session_id: str, out: RolloutOutput,
                      merged: SessionMerge) -> Trajectory:
    """One member's trajectory: the first merged segment's tokens, or the error fallback as data."""
    agent = out.agent_output
    meta = {**prompt.metadata, "prompt_id": prompt.id, "session_id": session_id,
            "rollout_metrics": agent.rollout_metrics, "response": agent.response, **_merge_meta(merged)}
    if agent.rollout_extra:
        meta["processor_metadata"] = agent.rollout_extra
    traj = Trajectory(id=f"{prompt.id}-{member}", sample_index=member, tools=prompt.tools, metadata=meta,
                      messages=[Message.model_validate(m) for m in agent.messages] or prompt.messages,
                      stop_reason="stop")
    if out.failed:
        traj.stop_reason = "api_error"
        traj.metadata.update(error_code="rollout_error", error=out.error)
    elif merged.segments:  # without any captured call there is nothing token-exact to store
        _take_segment(traj, merged.segments[0])
    return traj


def _take_segment(traj: Trajectory, segment: Trajectory) -> None:
    """Tokens and the messages they render, from the session's first segment."""
    traj.messages, traj.turns, traj.tokens = segment.messages, segment.turns, segment.tokens
    traj.tools = segment.tools or traj.tools
    traj.stop_reason = segment.stop_reason or "stop"
    traj.truncated = segment.stop_reason == "length"


def _merge_meta(merged: SessionMerge) -> dict[str, Any]:
    causes = Counter(m.cause for m in merged.mismatches)
    return {"policy_calls": merged.calls, "captured_calls": merged.captured_calls,
            "segments": len(merged.segments), "prefix_mismatches": len(merged.mismatches),
            "mismatch_causes": dict(causes)}


@contextlib.asynccontextmanager
async def open_processor_groups(spec: ProcessorSpec, settings: Settings, maker: async_sessionmaker[AsyncSession],
                                *, job_id: uuid.UUID, model: str | None, key_name: str,
                                sampling: SamplingParams | None = None, limits: RolloutLimits | None = None
                                ) -> AsyncIterator[ProcessorGroups]:
    """Load the processor (allowed modules only, checked again where it runs) and link it to the gateway.

    The job's ``sampling`` and ``limits`` reach every ``RolloutInput``; the member timeout is the
    tighter of the processor's ``timeout_s`` and the limits' ``timeout_s``.
    """
    check_processor_module(spec.classpath, settings.rollout_processor_modules)
    if limits is not None and limits.timeout_s is not None and limits.timeout_s < spec.timeout_s:
        spec = spec.model_copy(update={"timeout_s": limits.timeout_s})
    runtime = ProcessorRuntime(spec, allowed_modules=settings.rollout_processor_modules)
    async with open_gateway_link(settings, maker, key_name=key_name) as link:
        yield ProcessorGroups(runtime.process, link, window=runtime.spec.capacity, job_id=job_id,
                              model=model or await link.default_model(), sampling=sampling, limits=limits)


def _remote_process(services: ServiceLink, component: RolloutFunctionComponent) -> ProcessFn:
    """A member's run on the component's workers; a call that cannot run is that member's failure."""

    async def process(inp: RolloutInput) -> RolloutOutput:
        started = time.perf_counter()
        client = await services.functions()
        try:
            async with services.guard(client):
                out = await client.call_rollout(component, inp)
        except TrajforgeError as exc:
            out = rollout_error_output(inp, f"{exc.code}: {exc.message}")
        agent = out.agent_output
        agent.rollout_metrics = {**agent.rollout_metrics, "latency_s": time.perf_counter() - started,
                                 "tool_call_count": float(sum(len(m.get("tool_calls") or []) for m in agent.messages
                                                              if m.get("role") == "assistant"))}
        return out

    return process


@contextlib.asynccontextmanager
async def open_function_groups(component: RolloutFunctionComponent, settings: Settings,
                               maker: async_sessionmaker[AsyncSession], services: ServiceLink, *,
                               job_id: uuid.UUID, model: str | None, key_name: str,
                               sampling: SamplingParams | None = None, limits: RolloutLimits | None = None
                               ) -> AsyncIterator[ProcessorGroups]:
    """Members run by an uploaded rollout component, each on its own gateway session over the network.

    The component's workers are other processes, so ``model_resource.base_url`` must be a URL they
    reach: the deployment's (``public_base_url``), the gateway's (split), or a loopback server this
    shard runs for its in-process gateway. The member timeout is the tighter of the component's
    ``timeout`` and the limits' ``timeout_s``.
    """
    if limits is not None and limits.timeout_s is not None and limits.timeout_s < component.timeout:
        component = component.model_copy(update={"timeout": limits.timeout_s})
    runtime = component.runtime
    window = runtime.max_capacity * runtime.concurrency
    async with open_gateway_link(settings, maker, key_name=key_name, network=True) as link:
        yield ProcessorGroups(_remote_process(services, component), link, window=window, job_id=job_id,
                              model=model or await link.default_model(), sampling=sampling, limits=limits)
