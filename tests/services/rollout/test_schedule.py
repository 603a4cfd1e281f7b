"""Slot scheduling rules: their keys, the order the slot queue serves them in, and the engine's use of them.

The policy in the engine tests is scripted (fixed replies, tokenised by the real SmolLM2 tokenizer).
"""

from __future__ import annotations

import asyncio
from typing import Any, get_args

import pytest

from services.rollout.build import build_runtime
from services.rollout.engine import AsyncRolloutEngine
from services.rollout.estimate import Progress
from services.rollout.schedule import DEFAULT_SCHEDULE, SCHEDULES, Attained, Schedule, priority_key
from services.rollout.schemas import RolloutRunSpec
from services.rollout.slots import PrioritySlots
from shared.errors import InvalidInput
from shared.schema.budgets import RolloutLimits
from shared.settings import Settings
from tests.services.rollout.support import (
    FunctionTools,
    ScriptedPolicy,
    hermes_parser,
    tool_call_text,
)

# Three trajectories asking for a slot: (name, arrival time, what each has been through).
WAITERS = [
    ("deep_but_starved", 10.0, Attained(turns=5, waited_s=4.0, service_s=5.0)),
    ("shallow_fresh", 11.0, Attained(turns=1, waited_s=0.5, service_s=9.5)),
    ("middle_light", 12.0, Attained(turns=3, waited_s=3.0, service_s=1.0)),
]


def test_keys_follow_each_rule() -> None:
    att = Attained(turns=3, waited_s=1.5, service_s=2.0)
    assert priority_key("turns", att, 10.0) == 3.0
    assert priority_key("waited", att, 10.0) == 8.5  # arrival minus time already queued
    assert priority_key("service", att, 10.0) == 2.0
    assert priority_key("fifo", att, 10.0) == 10.0


@pytest.mark.parametrize(("schedule", "expected"), [
    ("turns", ["shallow_fresh", "middle_light", "deep_but_starved"]),
    # Total queueing by t=12: starved 4 + 2, middle 3 + 0, shallow 0.5 + 1.
    ("waited", ["deep_but_starved", "middle_light", "shallow_fresh"]),
    ("service", ["middle_light", "deep_but_starved", "shallow_fresh"]),
    ("fifo", ["deep_but_starved", "shallow_fresh", "middle_light"]),
])
async def test_the_slot_queue_serves_waiters_in_the_rules_order(schedule: Schedule, expected: list[str]) -> None:
    slots = PrioritySlots(1)
    await slots.acquire()
    served: list[str] = []

    async def wait(name: str, key: float) -> None:
        async with slots.slot(key):
            served.append(name)

    tasks = [asyncio.create_task(wait(name, priority_key(schedule, att, now))) for name, now, att in WAITERS]
    await asyncio.sleep(0.01)
    slots.release()
    await asyncio.gather(*tasks)
    assert served == expected


def _engine(tokenizer: Any, schedule: Schedule, concurrency: int) -> tuple[AsyncRolloutEngine, ScriptedPolicy]:
    policy = ScriptedPolicy(tokenizer, lambda u, t: tool_call_text("add", a=t, b=1) if t < 2 else "done",
                            delay_s=lambda i: 0.02)
    engine = AsyncRolloutEngine(policy, tools=FunctionTools(add=lambda a, b: a + b), parser=hermes_parser,
                                limits=RolloutLimits(max_turns=4), concurrency=concurrency, schedule=schedule)
    return engine, policy


@pytest.mark.parametrize("schedule", SCHEDULES)
async def test_every_rule_completes_the_batch_and_counts_queueing(smol_tokenizer: Any, schedule: Schedule) -> None:
    engine, policy = _engine(smol_tokenizer, schedule, concurrency=1)
    groups = await engine.collect_batch([{"id": "p", "messages": [{"role": "user", "content": "go"}]}],
                                        group_size=3)
    assert [t.turns for t in groups[0].trajectories] == [3, 3, 3]
    assert all(t.stop_reason == "stop" for t in groups[0].trajectories)
    assert policy.max_inflight == 1
    # Nine 20 ms calls through one slot: most of them waited for it.
    assert engine.stats["queued_ms"] >= 60


async def test_no_queueing_is_counted_below_the_cap(smol_tokenizer: Any) -> None:
    engine, _ = _engine(smol_tokenizer, "turns", concurrency=8)
    await engine.collect_batch([{"id": "p", "messages": [{"role": "user", "content": "go"}]}], group_size=3)
    assert engine.stats["queued_ms"] == 0 and engine.stats["policy_calls"] == 9


def test_an_unknown_rule_is_refused(smol_tokenizer: Any) -> None:
    with pytest.raises(InvalidInput, match="schedule must be one of"):
        _engine(smol_tokenizer, "random", concurrency=1)  # type: ignore[arg-type]


class RecordingSlots(PrioritySlots):
    """The engine's slot queue, recording the key of every request."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        self.keys: list[float] = []

    async def acquire(self, priority: float = 0) -> None:
        self.keys.append(priority)
        await super().acquire(priority)


async def _keys(tokenizer: Any, schedule: Schedule) -> tuple[list[float], AsyncRolloutEngine]:
    engine, _ = _engine(tokenizer, schedule, concurrency=1)
    engine.ctx.slots = slots = RecordingSlots(1)
    await engine.collect_batch([{"id": "p", "messages": [{"role": "user", "content": "go"}]}], group_size=3)
    return slots.keys, engine


async def test_the_selected_rule_sets_the_keys_the_engine_queues_by(smol_tokenizer: Any) -> None:
    turns, _ = await _keys(smol_tokenizer, "turns")
    assert sorted(turns) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    fifo, _ = await _keys(smol_tokenizer, "fifo")
    assert fifo == sorted(fifo) and len(set(fifo)) > 3  # arrival times on the loop's clock
    estimate, engine = await _keys(smol_tokenizer, "estimate")
    # Most estimated remaining seconds first: keys are minus an estimate, which the engine's
    # observations move (every member takes 3 of up to 4 turns, with tools between).
    assert len(estimate) == 9 and all(k < 0 for k in estimate)
    assert len({round(k, 9) for k in estimate}) > 3
    est = engine.ctx.scheduler.estimator
    assert est is not None
    assert est.turn_distribution()[3] > 0.5  # three trajectories finished after 3 turns
    assert est.tool_s(est_progress()) != pytest.approx(est.tool_prior_s)  # tool latency was observed


def est_progress() -> Progress:
    return Progress(group="other", member=0, turns=1, tool="add")


def test_settings_offer_exactly_the_engines_rules() -> None:
    field = Settings.model_fields["rollout_schedule"]
    assert get_args(field.annotation) == SCHEDULES
    assert field.default == DEFAULT_SCHEDULE


async def test_a_job_runs_with_the_configured_rule_and_relaunch_budget(tmp_path: Any) -> None:
    import tests.services.rollout.scripted  # noqa: F401 (registers the scripted policy)

    spec = RolloutRunSpec.model_validate({"group_size": 2, "relaunch": 0.125, "mode": "messages",
                                          "policy": {"backend": {"name": "scripted"}}})
    runtime = await build_runtime(spec, Settings(home=tmp_path, rollout_schedule="estimate"))
    assert runtime.engine is not None
    assert runtime.engine.ctx.scheduler.schedule == "estimate"
    assert runtime.engine.ctx.scheduler.estimator is not None
    assert runtime.engine.relaunch.budget == 0.125
