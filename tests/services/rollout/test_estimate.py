"""RemainingWork: what it estimates from turn counts, siblings and latency history, and the estimate rule's order."""

from __future__ import annotations

import asyncio

import pytest

from services.rollout.estimate import Progress, RemainingWork
from services.rollout.schedule import estimated_key
from services.rollout.slots import PrioritySlots
from shared.errors import InvalidInput


def _uniform_turns_left(max_turns: int, done: int) -> float:
    """Expected turns left (the waiting one included) when N is uniform on 1..max_turns and N > done."""
    return sum(range(1, max_turns - done + 1)) / (max_turns - done)


def test_with_nothing_observed_the_prior_is_uniform() -> None:
    est = RemainingWork(max_turns=8)
    assert est.turn_distribution()[1:] == pytest.approx([1 / 8] * 8)
    for done in range(8):
        assert est.turns_left("g", 0, done) == pytest.approx(_uniform_turns_left(8, done))
    assert est.turns_left("g", 0, 8) == 1.0


def test_finished_trajectories_shape_the_turn_distribution() -> None:
    est = RemainingWork(max_turns=4, turn_prior_weight=1.0)
    for member in range(20):
        est.observe_finished(f"g{member}", 0, 2)
    dist = est.turn_distribution()
    assert sum(dist) == pytest.approx(1.0)
    assert dist[2] > 0.9 and dist[1] < 0.05
    # Having done 2 turns, a trajectory is past the common case: what is left follows the prior's tail.
    assert est.turns_left("new", 0, 0) == pytest.approx(2.0, abs=0.1)


def test_running_trajectories_are_censored_not_ignored() -> None:
    """Early in a batch only short trajectories have ended; the long ones still running must count."""
    naive = RemainingWork(max_turns=8)
    censored = RemainingWork(max_turns=8)
    for member in range(10):
        naive.observe_finished("a", member, 1)
        censored.observe_finished("a", member, 1)
    for member in range(30):
        censored.observe_turn("b", member, 5)
    assert naive.turn_distribution()[1] > 0.8
    assert censored.turn_distribution()[1] == pytest.approx(10 / 41, abs=0.02)  # 10 ended of 40 (+prior) at risk
    assert censored.turns_left("c", 0, 0) > naive.turns_left("c", 0, 0) + 1.0


def test_siblings_move_a_members_estimate() -> None:
    est = RemainingWork(max_turns=8, sibling_prior=2.0)
    for member in range(1, 8):
        est.observe_finished("long", member, 8)
        est.observe_finished("short", member, 2)
    # Same turns done, same global history: only the siblings differ.
    long_left, short_left = est.turns_left("long", 0, 1), est.turns_left("short", 0, 1)
    assert long_left > 6.0 and short_left < 2.0
    # Past the short siblings' count, their evidence no longer applies: both groups look alike.
    assert est.turns_left("short", 0, 2) == pytest.approx(est.turns_left("long", 0, 2), rel=0.1)
    # A member's own record is left out of its group's evidence.
    assert est.group_distribution("long", exclude=1)[8] < est.group_distribution("long")[8]


def test_running_siblings_count_as_lower_bounds() -> None:
    est = RemainingWork(max_turns=8)
    for member in range(1, 8):
        est.observe_turn("g", member, 6)  # all still going after 6 turns
    fresh = RemainingWork(max_turns=8).turns_left("g", 0, 1)
    assert est.turns_left("g", 0, 1) > fresh + 2.0
    assert est.turns_left("g", 0, 1) > est.turns_left("other", 0, 1)


def test_per_tool_history_and_own_cost_set_the_seconds() -> None:
    est = RemainingWork(max_turns=2, policy_prior_s=0.1, tool_prior_s=0.1)
    for _ in range(99):
        est.observe_policy(0.1)
        est.observe_tool("fast", 0.01)
        est.observe_tool("slow", 1.0)
    est.observe_policy(0.1)
    # Per tool: its mean, shrunk toward the mean of all tools by one pseudo-call.
    assert est.tool_s(Progress("g", 0, 1, tool="slow")) == pytest.approx(0.995, abs=0.002)
    assert est.tool_s(Progress("g", 0, 1, tool="fast")) == pytest.approx(0.015, abs=0.002)
    assert est.tool_s(Progress("g", 0, 1, tool="unseen")) == pytest.approx(0.503, abs=0.002)
    # Its own policy calls took 0.5 s each: the estimate leans toward them as they accumulate.
    mine = Progress("g", 0, 1, tool="fast", policy_s=0.5)
    assert est.policy_s(mine) == pytest.approx(0.3)
    # Exactly one turn left after one turn done (max_turns 2): one policy call, no tool after it.
    assert est.remaining_s(mine) == pytest.approx(0.3)
    assert est.remaining_s(Progress("g", 0, 0)) == pytest.approx(1.5 * 0.1 + 0.5 * 0.505, abs=0.01)


def test_observation_order_does_not_matter() -> None:
    a, b = RemainingWork(max_turns=6), RemainingWork(max_turns=6)
    events = [("g", 1, 3), ("g", 2, 5), ("h", 1, 1), ("h", 2, 6)]
    for group, member, turns in events:
        a.observe_finished(group, member, turns)
    for group, member, turns in reversed(events):
        b.observe_finished(group, member, turns)
    a.observe_turn("g", 3, 2)
    b.observe_turn("g", 3, 2)
    assert a.turn_distribution() == pytest.approx(b.turn_distribution())
    assert a.turns_left("g", 0, 1) == pytest.approx(b.turns_left("g", 0, 1))


def test_bad_settings_are_refused() -> None:
    with pytest.raises(InvalidInput, match="max_turns"):
        RemainingWork(max_turns=0)
    with pytest.raises(InvalidInput, match="prior weights"):
        RemainingWork(max_turns=4, sibling_prior=0)


async def test_the_slot_queue_serves_the_most_estimated_work_first() -> None:
    est = RemainingWork(max_turns=8)
    for member in range(1, 8):
        est.observe_finished("hard", member, 8)
        est.observe_finished("easy", member, 2)
    for _ in range(20):
        est.observe_tool("python", 1.0)
        est.observe_tool("lookup", 0.01)
    waiters = {
        "easy_fast": Progress("easy", 0, 1, tool="lookup"),
        "hard_fast": Progress("hard", 0, 1, tool="lookup"),
        "hard_slow": Progress("hard", 9, 1, tool="python"),
        "fresh": Progress("new", 0, 0),
    }
    slots = PrioritySlots(1)
    await slots.acquire()
    served: list[str] = []

    async def wait(name: str, key: float) -> None:
        async with slots.slot(key):
            served.append(name)

    tasks = [asyncio.create_task(wait(name, estimated_key(est, p))) for name, p in waiters.items()]
    await asyncio.sleep(0.01)
    slots.release()
    await asyncio.gather(*tasks)
    # A fresh trajectory's tool is unknown: it is charged the mean of all tools, above a hard
    # prompt's cheap tool; an easy prompt's member, its siblings done at 2 turns, has about one left.
    assert served == ["hard_slow", "fresh", "hard_fast", "easy_fast"]


def test_a_done_group_is_forgotten_but_its_finished_members_still_count() -> None:
    est = RemainingWork(max_turns=4)
    est.observe_finished("g", 0, 2)
    est.observe_turn("g", 1, 3)  # cut when the group filled: it neither ended nor runs on
    with_running = est.turn_distribution()
    est.forget_group("g")
    clean = RemainingWork(max_turns=4)
    clean.observe_finished("h", 0, 2)
    assert est.turn_distribution() == pytest.approx(clean.turn_distribution())
    assert est.turn_distribution() != pytest.approx(with_running)
    assert est.group_distribution("g") == pytest.approx(est.turn_distribution())  # no sibling evidence left
    est.observe_finished("g", 0, 2)  # observations after a member ended change nothing
    est.observe_finished("g", 0, 2)
    est.observe_turn("g", 0, 3)
    assert est.turn_distribution()[2] > clean.turn_distribution()[2]


def test_the_estimate_rule_needs_its_estimator() -> None:
    from services.rollout.schedule import Attained, Scheduler, priority_key

    with pytest.raises(InvalidInput, match="estimator"):
        priority_key("estimate", Attained(), 0.0)
    sched = Scheduler("estimate", max_turns=8)
    fresh, deep = Attained(turns=0), Attained(turns=6, policy_calls=6)
    assert sched.key("g", 0, fresh, 0.0) < sched.key("g", 1, deep, 0.0)  # more work left: served first
    sched.policy_done(0.5)
    sched.tool_done("slow", 2.0)
    assert sched.key("g", 0, fresh, 0.0) < -3.0  # seconds now reflect the observed latencies
    assert Scheduler("turns").estimator is None
