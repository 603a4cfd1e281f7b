"""The slot-scheduling simulator behind bench/rollout_sched.py: its makespans on work small enough to check by hand."""

from __future__ import annotations

import pytest

from bench.rollout_sched import RULES, Relaunch, _Estimate, _Traj, lower_bound, simulate


def _batch() -> list[_Traj]:
    # Group "a": a long chain (0.1 + 1.0 tool + 0.1) and a short member; group "b": two short members.
    return [_Traj("a", 0, "t", [0.1, 0.1], [1.0]), _Traj("a", 1, "t", [0.2], []),
            _Traj("b", 0, "t", [0.3], []), _Traj("b", 1, "t", [0.1, 0.1], [0.05])]


@pytest.mark.parametrize("rule", sorted(RULES))
def test_with_spare_capacity_the_makespan_is_the_longest_chain(rule: str) -> None:
    run = simulate(_batch(), capacity=8, rule=RULES[rule](), group_size=2)
    assert run.makespan == pytest.approx(1.2)
    assert run.policy_s == pytest.approx(0.9)
    assert lower_bound(_batch(), 8) == pytest.approx(1.2)


def test_one_slot_serializes_policy_work_and_the_order_matters() -> None:
    def batch() -> list[_Traj]:  # the long chain arrives last
        return [_Traj("b", 0, "t", [0.5], []), _Traj("c", 0, "t", [0.5], []),
                _Traj("a", 0, "t", [0.1, 0.1], [1.0])]

    assert lower_bound(batch(), 1) == pytest.approx(1.2)
    fifo = simulate(batch(), capacity=1, rule=RULES["fifo"](), group_size=1)
    oracle = simulate(batch(), capacity=1, rule=RULES["oracle"](), group_size=1)
    assert fifo.policy_s == pytest.approx(1.2) and oracle.policy_s == pytest.approx(1.2)
    # "b" takes the free slot at 0; then FIFO serves "c" before the chain (2.2 s), while the oracle
    # serves the chain next and hides its tool behind "c" (0.5 + 0.1 + 1.0 + 0.1).
    assert fifo.makespan == pytest.approx(2.2)
    assert oracle.makespan == pytest.approx(1.7)


def test_a_relaunched_member_replaces_a_straggler_and_its_cost_is_counted() -> None:
    spares: list[tuple[str, int]] = []

    def spare(group: str, member: int) -> _Traj:
        spares.append((group, member))
        return _Traj(group, member, "t", [0.1], [])

    relaunch = Relaunch(spare, budget=0.25, stragglers=1)
    run = simulate(_batch(), capacity=8, rule=_Estimate(), group_size=2, relaunch=relaunch)
    # At 0.2 s group "a" waits only on member 0 (in its 1 s tool): the spare runs 0.2-0.3 s and is kept.
    assert spares == [("a", 2)] and relaunch.launched == 1 and relaunch.replaced == 1
    assert relaunch.spare_policy_s == pytest.approx(0.1)
    assert relaunch.cancelled_policy_s == pytest.approx(0.1)  # the straggler's first turn, thrown away
    assert run.makespan == pytest.approx(0.3)


def test_no_spare_beyond_the_budget() -> None:
    relaunch = Relaunch(lambda g, k: _Traj(g, k, "t", [5.0], []), budget=0.0)
    run = simulate(_batch(), capacity=8, rule=_Estimate(), group_size=2, relaunch=relaunch)
    assert relaunch.launched == 0 and run.makespan == pytest.approx(1.2)
