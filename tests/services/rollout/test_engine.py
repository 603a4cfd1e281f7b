"""AsyncRolloutEngine in message mode. The policy is a scripted policy (fixed replies,
tokenised by the real SmolLM2 tokenizer); tools are a real Python function registry."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from services.rollout.engine import AsyncRolloutEngine
from shared.errors import InvalidInput, ToolExecutionError
from shared.schema import STOP_REASONS, Trajectory
from shared.schema.budgets import RolloutLimits
from tests.services.rollout.support import (
    FunctionTools,
    ScriptedPolicy,
    hermes_parser,
    tool_call_text,
)


def prompt(text: str, pid: str = "p1") -> dict[str, Any]:
    return {"id": pid, "messages": [{"role": "user", "content": text}]}


def add_then_answer(user: str, turn: int) -> str:
    return tool_call_text("add", a=2, b=3) if turn == 0 else "The sum is 5."


def always_call(user: str, turn: int) -> str:
    return tool_call_text("add", a=turn, b=1)


def engine_for(policy: ScriptedPolicy, tools: Any = None, **kw: Any) -> AsyncRolloutEngine:
    limits = RolloutLimits(**kw.pop("limits", {}))
    return AsyncRolloutEngine(policy, tools=tools, parser=hermes_parser, limits=limits, **kw)


def add_tools() -> FunctionTools:
    return FunctionTools(add=lambda a, b: a + b)


async def test_plain_answer_stops_after_one_turn(smol_tokenizer: Any) -> None:
    policy = ScriptedPolicy(smol_tokenizer, lambda u, t: "Paris.")
    [group] = await engine_for(policy).collect_batch([prompt("Capital of France?")], group_size=2)
    assert [t.stop_reason for t in group.trajectories] == ["stop", "stop"]
    traj = group.trajectories[0]
    assert traj.turns == 1 and not traj.truncated
    assert traj.messages[-1].role == "assistant" and traj.messages[-1].text() == "Paris."
    assert traj.stop_reason in STOP_REASONS


async def test_tool_call_result_is_fed_back_with_its_call_id(smol_tokenizer: Any) -> None:
    tools = add_tools()
    policy = ScriptedPolicy(smol_tokenizer, add_then_answer)
    [group] = await engine_for(policy, tools).collect_batch([prompt("2+3?")], group_size=1)
    traj = group.trajectories[0]
    assert [m.role for m in traj.messages] == ["user", "assistant", "tool", "assistant"]
    call = traj.messages[1].tool_calls[0]
    assert call.name == "add" and traj.messages[2].tool_call_id == call.id == "call_1_0"
    assert traj.messages[2].text() == "5"
    assert traj.steps[0].parse_statuses == ["ok"] and traj.steps[0].observations == ["5"]
    assert traj.stop_reason == "stop" and traj.turns == 2
    assert [t.name for t in traj.tools] == ["add"]


async def test_max_turns_does_not_run_tools_on_the_last_turn(smol_tokenizer: Any) -> None:
    tools = add_tools()
    policy = ScriptedPolicy(smol_tokenizer, always_call)
    eng = engine_for(policy, tools, limits={"max_turns": 3})
    [group] = await eng.collect_batch([prompt("loop")], group_size=1)
    traj = group.trajectories[0]
    assert (traj.stop_reason, traj.turns, traj.truncated) == ("max_turns", 3, True)
    assert len(tools.calls) == 2 and sum(m.role == "tool" for m in traj.messages) == 2


async def test_length_finish_ends_truncated(smol_tokenizer: Any) -> None:
    policy = ScriptedPolicy(smol_tokenizer, lambda u, t: "a long answer " * 5, length_on={0})
    [group] = await engine_for(policy).collect_batch([prompt("talk")], group_size=1)
    assert (group.trajectories[0].stop_reason, group.trajectories[0].truncated) == ("length", True)


async def test_per_turn_budget_is_sent_and_total_budget_checked_before_the_call(smol_tokenizer: Any) -> None:
    policy = ScriptedPolicy(smol_tokenizer, always_call)
    eng = engine_for(policy, add_tools(), limits={"max_turns": 50, "max_tokens_per_turn": 40,
                                                  "max_total_tokens": 130})
    [group] = await eng.collect_batch([prompt("loop")], group_size=1)
    traj = group.trajectories[0]
    assert traj.stop_reason == "max_total_tokens" and traj.truncated
    assert policy.max_tokens_seen[0] == 40
    # Later turns are offered only what is left of the total budget.
    assert all(m is not None and m <= 40 for m in policy.max_tokens_seen)
    assert min(policy.max_tokens_seen) < 40


async def test_tool_output_is_capped_to_the_budget(smol_tokenizer: Any) -> None:
    tools = FunctionTools(add=lambda a, b: "x" * 500)
    policy = ScriptedPolicy(smol_tokenizer, add_then_answer)
    eng = engine_for(policy, tools, limits={"max_tool_output_chars": 50})
    [group] = await eng.collect_batch([prompt("2+3?")], group_size=1)
    observation = group.trajectories[0].messages[2].text()
    assert observation.startswith("x" * 50) and "truncated 450 chars" in observation


async def test_parse_failure_is_fed_back_under_the_observe_policy(smol_tokenizer: Any) -> None:
    def script(u: Any, t: int) -> str:
        return "<tool_call>{\"name\": \"add\", \"arguments\": {2}</tool_call>" if t == 0 else "ok"

    tools = add_tools()
    eng = engine_for(ScriptedPolicy(smol_tokenizer, script), tools)
    [group] = await eng.collect_batch([prompt("x")], group_size=1)
    traj = group.trajectories[0]
    assert traj.stop_reason == "stop" and traj.turns == 2 and tools.calls == []
    assert traj.steps[0].parse_statuses == ["invalid_json"]
    assert "could not be parsed (invalid_json)" in traj.messages[2].text()
    # The failed attempt is listed in history, so the tool message answers a known call id.
    assert [c.id for c in traj.messages[1].tool_calls or []] == [traj.messages[2].tool_call_id]


async def test_parse_failure_ends_the_trajectory_under_the_end_policy(smol_tokenizer: Any) -> None:
    def script(u: Any, t: int) -> str:
        return "<tool_call>{\"name\": \"add\"" if t == 0 else "ok"

    eng = engine_for(ScriptedPolicy(smol_tokenizer, script), add_tools(),
                     limits={"parse_failure_policy": "end"})
    [group] = await eng.collect_batch([prompt("x")], group_size=1)
    traj = group.trajectories[0]
    assert (traj.stop_reason, traj.turns) == ("tool_error", 1)
    assert traj.steps[0].parse_statuses == ["unclosed"] and traj.metadata["error_code"] == "parse_error"


async def test_one_failed_member_does_not_fail_its_group(smol_tokenizer: Any) -> None:
    policy = ScriptedPolicy(smol_tokenizer, lambda u, t: "fine", fail_calls={0})
    eng = engine_for(policy, limits={"max_api_retries": 0})
    [group] = await eng.collect_batch([prompt("x")], group_size=4)
    reasons = sorted(t.stop_reason or "" for t in group.trajectories)
    assert reasons == ["api_error", "stop", "stop", "stop"]
    failed = next(t for t in group.trajectories if t.stop_reason == "api_error")
    assert failed.metadata["error_code"] == "upstream_unavailable" and failed.turns == 0


async def test_transient_upstream_failure_is_retried(smol_tokenizer: Any) -> None:
    policy = ScriptedPolicy(smol_tokenizer, lambda u, t: "fine", fail_calls={0})
    [group] = await engine_for(policy, limits={"max_api_retries": 1, "retry_backoff_s": 0}).collect_batch(
        [prompt("x")], group_size=1)
    assert group.trajectories[0].stop_reason == "stop" and policy.calls == 2


async def test_failing_tool_becomes_an_error_observation(smol_tokenizer: Any) -> None:
    def broken(a: int, b: int) -> int:
        raise ToolExecutionError("disk on fire")

    eng = engine_for(ScriptedPolicy(smol_tokenizer, add_then_answer), FunctionTools(add=broken))
    [group] = await eng.collect_batch([prompt("x")], group_size=1)
    traj = group.trajectories[0]
    assert traj.stop_reason == "stop" and traj.messages[2].text() == "Error: disk on fire"
    assert traj.steps[0].tool_statuses == [{"ok": False, "error_type": "tool_error"}]


async def test_hung_tool_hits_its_timeout(smol_tokenizer: Any) -> None:
    async def hang(a: int, b: int) -> int:
        await asyncio.sleep(30)
        return 0

    eng = engine_for(ScriptedPolicy(smol_tokenizer, add_then_answer), FunctionTools(add=hang),
                     limits={"tool_timeout_s": 0.05})
    [group] = await eng.collect_batch([prompt("x")], group_size=1)
    traj = group.trajectories[0]
    assert traj.stop_reason == "stop" and "timed out" in traj.messages[2].text()


async def test_trajectory_timeout_keeps_partial_data(smol_tokenizer: Any) -> None:
    async def slow(a: int, b: int) -> int:
        await asyncio.sleep(30)
        return 0

    eng = engine_for(ScriptedPolicy(smol_tokenizer, add_then_answer), FunctionTools(add=slow),
                     limits={"timeout_s": 0.2, "tool_timeout_s": 0.2})
    started = time.perf_counter()
    [group] = await eng.collect_batch([prompt("x")], group_size=1)
    traj = group.trajectories[0]
    assert time.perf_counter() - started < 2
    assert (traj.stop_reason, traj.turns, traj.truncated) == ("timeout", 1, True)
    assert traj.messages[1].tool_calls is not None


async def test_oversampling_keeps_first_finished_and_records_the_cut(smol_tokenizer: Any) -> None:
    delays = {0: 5.0, 1: 0.01, 2: 5.0, 3: 0.02}
    policy = ScriptedPolicy(smol_tokenizer, lambda u, t: "done", delay_s=lambda i: delays.get(i, 0.0))
    eng = engine_for(policy, oversample=2)
    started = time.perf_counter()
    [group] = await eng.collect_batch([prompt("x")], group_size=2)
    assert time.perf_counter() - started < 2
    assert [t.sample_index for t in group.trajectories] == [1, 3]
    assert {(c.member, c.reason, c.stop_reason) for c in group.cut} == {
        (0, "unfinished_when_group_full", "cancelled"), (2, "unfinished_when_group_full", "cancelled")}
    assert policy.cancelled == 2  # the cut members' in-flight calls were cancelled


async def test_cancelling_a_batch_reaches_in_flight_calls(smol_tokenizer: Any) -> None:
    policy = ScriptedPolicy(smol_tokenizer, lambda u, t: "done", delay_s=lambda i: 30.0)
    eng = engine_for(policy, concurrency=3)
    task = asyncio.create_task(eng.collect_batch([prompt("x"), prompt("y", "p2")], group_size=4))
    await asyncio.sleep(0.1)
    assert policy.inflight == 3
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert policy.cancelled == 3 and policy.inflight == 0


async def test_concurrency_cap_bounds_in_flight_requests(smol_tokenizer: Any) -> None:
    policy = ScriptedPolicy(smol_tokenizer, add_then_answer, delay_s=lambda i: 0.01)
    eng = engine_for(policy, add_tools(), concurrency=3)
    groups = await eng.collect_batch([prompt("a"), prompt("b", "p2")], group_size=8)
    assert policy.max_inflight == 3 and policy.calls == 32
    assert all(t.stop_reason == "stop" for g in groups for t in g.trajectories)
    assert eng.stats["turns"] == 32


async def test_tools_overlap_inference_of_other_trajectories(smol_tokenizer: Any) -> None:
    async def slow_add(a: int, b: int) -> int:
        await asyncio.sleep(0.3)
        return a + b

    policy = ScriptedPolicy(smol_tokenizer, add_then_answer, delay_s=lambda i: 0.05)
    eng = engine_for(policy, FunctionTools(add=slow_add), concurrency=1)
    started = time.perf_counter()
    await eng.collect_batch([prompt("a")], group_size=4)
    elapsed = time.perf_counter() - started
    # Serial would be 4 x (0.05 + 0.3 + 0.05) = 1.6 s; tools run while others sample.
    assert elapsed < 1.0


async def test_per_trajectory_tool_factory_gives_each_member_its_own_executor(smol_tokenizer: Any) -> None:
    made: list[FunctionTools] = []

    def factory(traj: Trajectory) -> FunctionTools:
        made.append(add_tools())
        return made[-1]

    eng = engine_for(ScriptedPolicy(smol_tokenizer, add_then_answer), factory)
    await eng.collect_batch([prompt("x")], group_size=3)
    assert len(made) == 3 and all(len(t.calls) == 1 for t in made)


async def test_stream_groups_yields_each_group_once(smol_tokenizer: Any) -> None:
    policy = ScriptedPolicy(smol_tokenizer, lambda u, t: "ok")
    eng = engine_for(policy)
    seen = [g.prompt_id async for g in eng.stream_groups([prompt("a", "p1"), prompt("b", "p2")], 2)]
    assert sorted(seen) == ["p1", "p2"]


async def test_prompt_without_user_turn_is_refused(smol_tokenizer: Any) -> None:
    eng = engine_for(ScriptedPolicy(smol_tokenizer, lambda u, t: "ok"))
    with pytest.raises(InvalidInput):
        await eng.collect_batch([{"id": "s", "messages": [{"role": "system", "content": "hi"}]}])


async def test_slowest_member_is_cut_once_the_group_is_full(smol_tokenizer: Any) -> None:
    delays = {0: 0.05, 1: 0.01, 2: 0.3}
    policy = ScriptedPolicy(smol_tokenizer, lambda u, t: "done", delay_s=lambda i: delays.get(i, 0.0))
    [group] = await engine_for(policy, oversample=1).collect_batch([prompt("x")], group_size=2)
    assert [t.sample_index for t in group.trajectories] == [0, 1]
    [cut] = group.cut
    assert (cut.member, cut.reason) == (2, "unfinished_when_group_full")
    assert group.trajectories[0].metadata.get("cut") is None


async def test_a_job_seed_gives_each_member_and_turn_its_own_stream(smol_tokenizer: Any) -> None:
    # One seed for the whole job would make every member of a group the same sample: no signal.
    from shared.schema import SamplingParams

    seeds: list[int | None] = []

    class SeedRecorder(ScriptedPolicy):
        async def _reply(self, user: str, turn: int, sampling: SamplingParams, prompt_tokens: int) -> Any:
            seeds.append(sampling.seed)
            return await super()._reply(user, turn, sampling, prompt_tokens)

    eng = engine_for(SeedRecorder(smol_tokenizer, add_then_answer), add_tools(),
                     sampling_params=SamplingParams(seed=5))
    await eng.collect_batch([prompt("add")], group_size=3)
    assert len(seeds) == 6 and len(set(seeds)) == 6 and all(s is not None for s in seeds)
