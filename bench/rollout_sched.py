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
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.rollout import Model
from services.rollout.schedule import SCHEDULES, Attained, Schedule, priority_key


@dataclass
class _Traj:
    policy: list[float]
    tools: list[float]
    attained: Attained = field(default_factory=Attained)
    arrived: float = 0.0

    def remaining(self) -> float:
        """Actual work left (what only the oracle knows)."""
        k = self.attained.turns
        return sum(self.policy[k:]) + sum(self.tools[k:])


def _workload(model: Model, prompts: int, group: int) -> list[_Traj]:
    trajs = []
    for p in range(prompts):
        for k in range(group):
            conv = f"p{p}/{k}"
            n = model.turns(conv)
            trajs.append(_Traj([model.policy_s(conv, t) for t in range(n)],
                               [model.tool_s(conv, t) for t in range(n - 1)]))
    return trajs


def simulate(trajs: list[_Traj], capacity: int, key: Callable[[_Traj, float], float]) -> float:
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
            heapq.heappush(queue, (key(trajs[i], now), next(seq), i))

    for i in range(len(trajs)):
        arrive(i, 0.0)
    while events:
        now, _, kind, i = heapq.heappop(events)
        if kind == "tool":
            arrive(i, now)
            continue
        if queue:
            start(heapq.heappop(queue)[2], now)
        else:
            free += 1
        t = trajs[i]
        t.attained.turns += 1
        if t.attained.turns >= len(t.policy):
            end = max(end, now)
            continue
        took = t.tools[t.attained.turns - 1]
        t.attained.service_s += took
        heapq.heappush(events, (now + took, next(seq), "tool", i))
    return end


def _engine_rule(schedule: Schedule) -> Callable[[_Traj, float], float]:
    def key(t: _Traj, now: float) -> float:
        return priority_key(schedule, t.attained, now)

    return key


def _oracle(t: _Traj, now: float) -> float:
    return -t.remaining()


def _rules() -> dict[str, Callable[[_Traj, float], float]]:
    rules: dict[str, Callable[[_Traj, float], float]] = {name: _engine_rule(name) for name in SCHEDULES}
    rules["oracle"] = _oracle
    return rules


def main(args: argparse.Namespace) -> None:
    """Print each rule's makespan / lower bound, mean and worst over the seeds."""
    print(f"slot scheduling, simulated: {args.prompts} prompts x group {args.group}, seeds 1..{args.seeds}")
    for capacity in args.capacities:
        ratios: dict[str, list[float]] = {name: [] for name in _rules()}
        for seed in range(1, args.seeds + 1):
            model = Model(seed=seed, policy_median_s=0.06, policy_sigma=0.6, tool_scale_s=0.02, tool_alpha=1.5,
                          tool_cap_s=2.0)
            chain, cap_bound, _ = model.bounds(args.prompts, args.group, capacity)
            for name, rule in _rules().items():
                makespan = simulate(_workload(model, args.prompts, args.group), capacity, rule)
                ratios[name].append(makespan / max(chain, cap_bound))
        print(f"upstream capacity {capacity}:")
        for name, values in ratios.items():
            print(f"  {name:8s} mean {sum(values) / len(values):.3f}x lower bound, worst {max(values):.3f}x, "
                  f"seed 7 {values[6] if len(values) > 6 else float('nan'):.3f}x")


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--capacities", type=lambda v: [int(x) for x in v.split(",")], default=[128, 256, 512])
    return ap.parse_args()


if __name__ == "__main__":
    main(_args())
