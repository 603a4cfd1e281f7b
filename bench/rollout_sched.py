"""Slot scheduling rules of the rollout engine, replayed without the network.

bench/rollout.py measures the engine over loopback HTTP, where a run's noise
(CPU contention, timers) is as large as the differences between scheduling
rules. This script replays the same latency model (bench/rollout.py's
``Model``: lognormal policy turns, Pareto tools, 1..8 turns) as a
discrete-event simulation of an upstream with ``capacity`` slots and the
engine's slot queue, so many seeds are cheap and each rule faces identical
work. It prints, per capacity, each rule's makespan as a ratio to the lower
bound max(longest chain, policy work / capacity), mean and worst over the
seeds, next to ``oracle``: longest actual remaining work first, which knows
the future and shows what a better order could gain at most.

Run: ``python bench/rollout_sched.py [--seeds 30] [--capacities 128,256,512]``.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import math
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.rollout import MAX_TURNS, Model
from services.rollout.estimate import Progress, RemainingWork
from services.rollout.schedule import SCHEDULES, Attained, Schedule, estimated_key, priority_key


@dataclass
class _Traj:
    group: str
    member: int
    tool: str
    policy: list[float]
    tools: list[float]
    attained: Attained = field(default_factory=Attained)
    arrived: float = 0.0
    policy_done_s: float = 0.0
    tool_done_s: float = 0.0

    def remaining(self) -> float:
        """Actual work left (what only the oracle knows)."""
        k = self.attained.turns
        return sum(self.policy[k:]) + sum(self.tools[k:])

    def progress(self) -> Progress:
        """What the engine knows about this trajectory now (no future)."""
        k = self.attained.turns
        return Progress(group=self.group, member=self.member, turns=k, tool=self.tool if k else None,
                        policy_s=self.policy_done_s, tool_s=self.tool_done_s, tool_calls=k)


def _bench_workload(model: Model, prompts: int, group: int) -> list[_Traj]:
    """bench/rollout.py's work: every trajectory independent, one tool."""
    trajs = []
    for p in range(prompts):
        for k in range(group):
            conv = f"p{p}/{k}"
            n = model.turns(conv)
            trajs.append(_Traj(f"p{p}", k, "work", [model.policy_s(conv, t) for t in range(n)],
                               [model.tool_s(conv, t) for t in range(n - 1)]))
    return trajs


_TOOL_SCALES = {"lookup": 0.005, "search": 0.02, "python": 0.06}


def _grouped_workload(model: Model, prompts: int, group: int) -> list[_Traj]:
    """Work with the structure real prompts have: a prompt's difficulty sets its members' turn counts
    (within one turn of each other), a prompt uses one kind of tool (latency by tool: 5, 20, 60 ms
    Pareto scale), and a member's response length scales all of its policy turns."""
    trajs = []
    for p in range(prompts):
        rng = random.Random(f"{model.seed}:grouped:{p}")
        base, tool = rng.randint(1, MAX_TURNS), rng.choice(sorted(_TOOL_SCALES))
        scale = _TOOL_SCALES[tool] / model.tool_scale_s
        for k in range(group):
            conv = f"p{p}/{k}"
            n = min(MAX_TURNS, max(1, base + rng.randint(-1, 1)))
            length = math.exp(0.4 * rng.gauss(0, 1))
            trajs.append(_Traj(f"p{p}", k, tool, [length * model.policy_s(conv, t) for t in range(n)],
                               [min(model.tool_cap_s, scale * model.tool_s(conv, t)) for t in range(n - 1)]))
    return trajs


WORKLOADS: dict[str, Callable[[Model, int, int], list[_Traj]]] = {
    "bench": _bench_workload, "grouped": _grouped_workload}


class _Rule:
    """A slot-queue key computed when a request starts waiting, and what the rule gets to observe."""

    def key(self, t: _Traj, now: float) -> float:
        raise NotImplementedError

    def policy_done(self, t: _Traj, seconds: float) -> None:
        """A policy call of ``t`` ended after ``seconds`` of service."""

    def tool_done(self, t: _Traj, seconds: float) -> None:
        """A tool call of ``t`` ended after ``seconds``."""

    def turn_done(self, t: _Traj, finished: bool) -> None:
        """``t`` finished a turn (and maybe the trajectory)."""


class _EngineRule(_Rule):
    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule

    def key(self, t: _Traj, now: float) -> float:
        return priority_key(self.schedule, t.attained, now)


class _Oracle(_Rule):
    def key(self, t: _Traj, now: float) -> float:
        return -t.remaining()


class _Estimate(_Rule):
    """services.rollout.schedule.estimated_key, fed only what has already happened."""

    def __init__(self) -> None:
        self.estimator = RemainingWork(max_turns=MAX_TURNS)

    def key(self, t: _Traj, now: float) -> float:
        return estimated_key(self.estimator, t.progress())

    def policy_done(self, t: _Traj, seconds: float) -> None:
        self.estimator.observe_policy(seconds)

    def tool_done(self, t: _Traj, seconds: float) -> None:
        self.estimator.observe_tool(t.tool, seconds)

    def turn_done(self, t: _Traj, finished: bool) -> None:
        if finished:
            self.estimator.observe_finished(t.group, t.member, t.attained.turns)
        else:
            self.estimator.observe_turn(t.group, t.member, t.attained.turns)


def simulate(trajs: list[_Traj], capacity: int, rule: _Rule) -> float:
    """Makespan of the batch: policy turns hold one of ``capacity`` slots, tools run outside them."""
    seq = itertools.count()
    events: list[tuple[float, int, str, int]] = []
    queue: list[tuple[float, int, int]] = []
    free, end = capacity, 0.0

    def start(i: int, now: float) -> None:
        t = trajs[i]
        t.attained.waited_s += now - t.arrived
        took = t.policy[t.attained.turns]
        t.attained.service_s += took
        heapq.heappush(events, (now + took, next(seq), "policy", i))

    def arrive(i: int, now: float) -> None:
        nonlocal free
        trajs[i].arrived = now
        if free and not queue:
            free -= 1
            start(i, now)
        else:
            heapq.heappush(queue, (rule.key(trajs[i], now), next(seq), i))

    for i in range(len(trajs)):
        arrive(i, 0.0)
    while events:
        now, _, kind, i = heapq.heappop(events)
        t = trajs[i]
        if kind == "tool":
            took = t.tools[t.attained.turns - 1]
            t.tool_done_s += took
            rule.tool_done(t, took)
            arrive(i, now)
            continue
        took = t.policy[t.attained.turns]
        t.policy_done_s += took
        rule.policy_done(t, took)
        t.attained.turns += 1
        finished = t.attained.turns >= len(t.policy)
        rule.turn_done(t, finished)
        if queue:
            start(heapq.heappop(queue)[2], now)
        else:
            free += 1
        if finished:
            end = max(end, now)
            continue
        took = t.tools[t.attained.turns - 1]
        t.attained.service_s += took
        heapq.heappush(events, (now + took, next(seq), "tool", i))
    return end


def lower_bound(trajs: list[_Traj], capacity: int) -> float:
    """max(longest chain of policy turns and tools, policy work / capacity)."""
    chain = max(sum(t.policy) + sum(t.tools) for t in trajs)
    return max(chain, sum(sum(t.policy) for t in trajs) / capacity)


RULES: dict[str, Callable[[], _Rule]] = {
    **{name: (lambda name=name: _EngineRule(name)) for name in SCHEDULES},  # type: ignore[misc]
    "estimate": _Estimate, "oracle": _Oracle}


def main(args: argparse.Namespace) -> None:
    """Print each rule's makespan / lower bound, mean and worst over the seeds."""
    print(f"slot scheduling, simulated: {args.prompts} prompts x group {args.group}, seeds 1..{args.seeds}")
    for workload in args.workloads:
        make = WORKLOADS[workload]
        for capacity in args.capacities:
            ratios: dict[str, list[float]] = {name: [] for name in RULES}
            for seed in range(1, args.seeds + 1):
                model = Model(seed=seed, policy_median_s=0.06, policy_sigma=0.6, tool_scale_s=0.02,
                              tool_alpha=1.5, tool_cap_s=2.0)
                bound = lower_bound(make(model, args.prompts, args.group), capacity)
                for name, rule in RULES.items():
                    makespan = simulate(make(model, args.prompts, args.group), capacity, rule())
                    ratios[name].append(makespan / bound)
            print(f"workload {workload}, upstream capacity {capacity}:")
            base = sum(ratios["turns"]) / len(ratios["turns"])
            for name, values in ratios.items():
                mean = sum(values) / len(values)
                print(f"  {name:8s} mean {mean:.3f}x lower bound ({mean / base:.3f}x turns), "
                      f"worst {max(values):.3f}x, seed 7 {values[6] if len(values) > 6 else float('nan'):.3f}x")


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--capacities", type=lambda v: [int(x) for x in v.split(",")], default=[128, 256, 512])
    ap.add_argument("--workloads", type=lambda v: v.split(","), default=list(WORKLOADS),
                    help=f"comma-separated, of: {', '.join(WORKLOADS)}")
    return ap.parse_args()


if __name__ == "__main__":
    main(_args())
