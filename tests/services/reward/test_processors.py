"""Reward processors: spec processor, classpath loading, failures and hangs recorded per trajectory."""

from __future__ import annotations

import asyncio
import time

import pytest

from services.reward.errors import RewardSpecError
from services.reward.processors import (
    ProcessorEntry,
    SpecProcessor,
    load_processor,
    run_processors,
)
from shared.functions import AgentOutput, Reward, RewardInput, RewardOutput

TRUTH = {"decision": "tool_call", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}


class Boom:
    """Raises on one input."""

    def process(self, inp: RewardInput) -> RewardOutput:
        if (inp.agent_output.rollout_extra or {}).get("explode"):
            raise RuntimeError("kaboom")
        return RewardOutput(reward=Reward(reward_score=0.5, reward_metrics={"seen": 1.0}))


class Sleepy:
    """Hangs on one input."""

    def __init__(self, delay_s: float = 5.0) -> None:
        self.delay_s = delay_s

    def process(self, inp: RewardInput) -> RewardOutput:
        if (inp.agent_output.rollout_extra or {}).get("hang"):
            time.sleep(self.delay_s)
        return RewardOutput(reward=Reward(reward_score=1.0))


class AsyncHang:
    """An async processor that never finishes."""

    async def process(self, inp: RewardInput) -> RewardOutput:
        await asyncio.sleep(3600)
        return RewardOutput(reward=Reward(reward_score=1.0))


def _inputs(make_traj, **flags: bool) -> list[RewardInput]:
    good = make_traj(calls=[("get_weather", {"city": "Paris"})])
    bad = make_traj(calls=[("get_weather", {"city": "Paris"})])
    bad.metadata.update(flags)
    return [RewardInput(trajectory=good, ground_truth=TRUTH), RewardInput(trajectory=bad, ground_truth=TRUTH)]


def test_spec_processor_reads_truth_from_rollout_extra(make_traj) -> None:
    traj = make_traj(calls=[("get_weather", {"city": "Paris"})])
    inp = RewardInput(trajectory=traj, agent_output=AgentOutput(messages=[m.to_openai() for m in traj.messages],
                                                                rollout_extra={"solution": TRUTH}))
    assert inp.truth() == TRUTH
    out = SpecProcessor().process(inp)
    assert out.status == "SUCCESS" and out.reward.reward_score == pytest.approx(1.0)
    assert out.reward.reward_metrics["tool_call/decision_accuracy"] == 1.0


def test_rollout_error_is_failed_and_masked(make_traj) -> None:
    out = SpecProcessor().process(RewardInput(trajectory=make_traj("ROLLOUT_ERROR: 502"), ground_truth=TRUTH))
    assert out.status == "FAILED" and out.error == "rollout_error" and out.reward.reward_metrics["rollout_error"] == 1


def test_missing_ground_truth_is_a_failure(make_traj) -> None:
    out = SpecProcessor().process(RewardInput(trajectory=make_traj("hi")))
    assert out.status == "FAILED" and out.error == "no ground truth"


def test_load_by_classpath_and_bad_classpath() -> None:
    proc = load_processor("services.reward.processors:SpecProcessor")
    assert isinstance(proc, SpecProcessor)
    with pytest.raises(RewardSpecError):
        load_processor("services.reward.nowhere:Nothing")


async def test_raising_processor_fails_only_its_trajectory(make_traj) -> None:
    entries = [ProcessorEntry(processor=Boom(), name="boom", weight=2.0)]
    outs = await run_processors(entries, _inputs(make_traj, explode=True))
    assert outs[0].status == "SUCCESS" and outs[0].reward.reward_score == pytest.approx(1.0)
    assert outs[1].status == "FAILED" and "kaboom" in (outs[1].error or "")


async def test_hanging_processor_times_out_per_trajectory(make_traj) -> None:
    entries = [ProcessorEntry(processor=Sleepy(delay_s=3.0), name="sleepy", timeout_s=0.3),
               ProcessorEntry(processor=SpecProcessor(), name="spec", weight=0.5)]
    started = time.perf_counter()
    outs = await run_processors(entries, _inputs(make_traj, hang=True))
    assert time.perf_counter() - started < 2.5
    assert outs[0].status == "SUCCESS" and outs[0].reward.reward_score == pytest.approx(1.0 + 0.5)
    assert outs[1].status == "FAILED" and "timed out" in (outs[1].error or "")
    assert outs[1].reward.reward_metrics["spec"] == pytest.approx(1.0)


async def test_async_processor_hang_is_cancelled(make_traj) -> None:
    entries = [ProcessorEntry(processor=AsyncHang(), name="ahang", timeout_s=0.2)]
    outs = await run_processors(entries, _inputs(make_traj))
    assert all(o.status == "FAILED" for o in outs)


async def test_zero_weight_processor_is_metric_only(make_traj) -> None:
    entries = [ProcessorEntry(processor=SpecProcessor(), name="spec"),
               ProcessorEntry(processor=Boom(), name="boom", weight=0.0)]
    outs = await run_processors(entries, _inputs(make_traj, explode=True))
    assert outs[1].status == "SUCCESS" and outs[1].reward.reward_score == pytest.approx(1.0)
    assert outs[0].reward.reward_metrics["boom"] == pytest.approx(0.5)
