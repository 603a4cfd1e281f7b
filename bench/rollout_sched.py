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

``estimate`` is services.rollout.schedule.estimated_key: most estimated
remaining work first, its estimator fed only what has already happened
(policy and tool latencies, turns done, members finished). Two workloads:
``bench`` is bench/rollout.py's, where every trajectory is independent, so
nothing observed says more about the work left than the turn count does;
``grouped`` gives prompts a difficulty their members share, one tool kind per
prompt and a per-member response length, which the estimator can learn.

Two ways of trading extra upstream work for a shorter batch are measured too,
both with the estimate rule and both keeping ``group`` members per prompt (so
the kept set shifts toward faster members, reported): ``estimate+relaunch``
starts a fresh member for a group's last stragglers when a slot would
otherwise go idle, within ``--relaunch-budget`` spares per member; and
``estimate+oversample`` is the engine's ``oversample=1`` (one extra member
per group from the start). Their makespans are ratios to the lower bound of
the batch without spares, which they can beat by dropping the longest chains.

Run: ``python bench/rollout_sched.py [--seeds 30] [--capacities 128,256,512] [--workloads bench,grouped]``.
"""

from __future__ import annotations

import abc
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

from bench import headline
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


def _bench_member(model: Model, p: int, k: int) -> _Traj:
    """bench/rollout.py's work: every trajectory independent, one tool."""
    conv = f"p{p}/{k}"
    n = model.turns(conv)
    return _Traj(f"p{p}", k, "work", [model.policy_s(conv, t) for t in range(n)],
                 [model.tool_s(conv, t) for t in range(n - 1)])


_TOOL_SCALES = {"lookup": 0.005, "search": 0.02, "python": 0.06}


def _grouped_member(model: Model, p: int, k: int) -> _Traj:
    """Work with the structure real prompts have: a prompt's difficulty sets its members' turn counts
    (within one turn of each other), a prompt uses one kind of tool (latency by tool: 5, 20, 60 ms
    Pareto scale), and a member's response length scales all of its policy turns."""
    prompt = random.Random(f"{model.seed}:grouped:{p}")
    base, tool = prompt.randint(1, MAX_TURNS), prompt.choice(sorted(_TOOL_SCALES))
    member = random.Random(f"{model.seed}:grouped:{p}:{k}")
    n = min(MAX_TURNS, max(1, base + member.randint(-1, 1)))
    length, scale = math.exp(0.4 * member.gauss(0, 1)), _TOOL_SCALES[tool] / model.tool_scale_s
    conv = f"p{p}/{k}"
    return _Traj(f"p{p}", k, tool, [length * model.policy_s(conv, t) for t in range(n)],
                 [min(model.tool_cap_s, scale * model.tool_s(conv, t)) for t in range(n - 1)])


Member = Callable[[Model, int, int], _Traj]
WORKLOADS: dict[str, Member] = {"bench": _bench_member, "grouped": _grouped_member}


def _workload(member: Member, model: Model, prompts: int, group: int) -> list[_Traj]:
    return [member(model, p, k) for p in range(prompts) for k in range(group)]


class _Rule(abc.ABC):
    """A slot-queue key computed when a request starts waiting, and what the rule gets to observe."""

    @abc.abstractmethod
    def key(self, t: _Traj, now: float) -> float:
        """Smaller keys are served first."""

    def policy_done(self, t: _Traj, seconds: float) -> None:  # noqa: B027 (observing is optional: rules that ignore it inherit this)
        """A policy call of ``t`` ended after ``seconds`` of service."""

    def tool_done(self, t: _Traj, seconds: float) -> None:  # noqa: B027 (observing is optional: rules that ignore it inherit this)
        """A tool call of ``t`` ended after ``seconds``."""

    def turn_done(self, t: _Traj, finished: bool) -> None:  # noqa: B027 (observing is optional: rules that ignore it inherit this)
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


@dataclass
class Relaunch:
    """Speculative relaunch of stragglers into idle capacity: when a slot would go idle and some group
    is down to its last running member, start one fresh member of that prompt (the straggler the rule
    ranks most urgent first; while ``budget`` spares per member of the batch are left). The group
    keeps whichever finishes first and cancels the other, so a spare costs upstream work, not slots
    another trajectory was waiting for."""

    spare: Callable[[str, int], _Traj]
    budget: float
    stragglers: int = 1  # a group qualifies when it waits on at most this many members and has no spare
    launched: int = 0
    replaced: int = 0  # groups that kept the spare instead of the straggler (a shift toward short ones)
    spare_policy_s: float = 0.0  # policy seconds spent on spares, finished or cancelled
    cancelled_policy_s: float = 0.0  # policy seconds spent on cancelled members (spares or stragglers)


@dataclass
class _Run:
    makespan: float
    policy_s: float  # all policy seconds served (the upstream's work)


def simulate(trajs: list[_Traj], capacity: int, rule: _Rule, group_size: int,
             relaunch: Relaunch | None = None) -> _Run:
    """Policy turns hold one of ``capacity`` slots, tools run outside them; a group is done when
    ``group_size`` of its members finished and the batch when every group is."""
    seq = itertools.count()
    events: list[tuple[float, int, str, int]] = []
    queue: list[tuple[float, int, int]] = []
    state: list[str] = []  # per trajectory: queued, policy, tool, done, cancelled
    started_at: list[float] = []  # when the running policy call started
    groups: dict[str, list[int]] = {}
    finished: dict[str, int] = {}
    free, end, served = capacity, 0.0, 0.0
    budget = relaunch.budget * len(trajs) if relaunch else 0.0

    def start(i: int, now: float) -> None:
        t = trajs[i]
        state[i], started_at[i] = "policy", now
        t.attained.waited_s += now - t.arrived
        took = t.policy[t.attained.turns]
        t.attained.service_s += took
        heapq.heappush(events, (now + took, next(seq), "policy", i))

    def grant(now: float) -> None:
        nonlocal free
        while queue:
            i = heapq.heappop(queue)[2]
            if state[i] == "queued":
                start(i, now)
                return
        free += 1
        if relaunch is not None:
            speculate(now)

    def speculate(now: float) -> None:
        assert relaunch is not None
        while free and relaunch.launched < budget:
            lone = [j for g, members in groups.items()
                    if 0 < (needed := group_size - finished.get(g, 0)) <= relaunch.stragglers
                    and len(alive := [j for j in members if state[j] not in ("done", "cancelled")]) == needed
                    for j in alive]
            if not lone:
                return
            straggler = trajs[min(lone, key=lambda j: (rule.key(trajs[j], now), j))]
            relaunch.launched += 1
            add(relaunch.spare(straggler.group, group_size - 1 + relaunch.launched), now)

    def arrive(i: int, now: float) -> None:
        nonlocal free
        trajs[i].arrived, state[i] = now, "queued"
        if free and not queue:
            free -= 1
            start(i, now)
        else:
            heapq.heappush(queue, (rule.key(trajs[i], now), next(seq), i))

    def add(t: _Traj, now: float) -> None:
        trajs.append(t)
        state.append("queued")
        started_at.append(0.0)
        groups.setdefault(t.group, []).append(len(trajs) - 1)
        arrive(len(trajs) - 1, now)

    def cancel(i: int, now: float) -> None:
        nonlocal served
        if relaunch is not None:
            relaunch.cancelled_policy_s += trajs[i].policy_done_s
            if state[i] == "policy":
                relaunch.cancelled_policy_s += now - started_at[i]
        if state[i] == "policy":
            served += now - started_at[i]
            grant(now)
        state[i] = "cancelled"

    def member_done(i: int, now: float) -> None:
        nonlocal end
        t = trajs[i]
        finished[t.group] = finished.get(t.group, 0) + 1
        running = [j for j in groups[t.group] if state[j] not in ("done", "cancelled")]
        if finished[t.group] >= group_size:
            end = max(end, now)
            if relaunch is not None and t.member >= group_size:
                relaunch.replaced += 1
            for j in running:
                cancel(j, now)

    original = list(trajs)
    trajs.clear()
    for t in original:
        add(t, 0.0)
    while events:
        now, _, kind, i = heapq.heappop(events)
        t = trajs[i]
        if state[i] == "cancelled":
            continue
        if kind == "tool":
            took = t.tools[t.attained.turns - 1]
            t.tool_done_s += took
            rule.tool_done(t, took)
            arrive(i, now)
            continue
        took = t.policy[t.attained.turns]
        t.policy_done_s += took
        served += took
        if relaunch is not None and t.member >= group_size:
            relaunch.spare_policy_s += took
        rule.policy_done(t, took)
        t.attained.turns += 1
        done = t.attained.turns >= len(t.policy)
        rule.turn_done(t, done)
        grant(now)
        if done:
            state[i] = "done"
            member_done(i, now)
            if relaunch is not None:  # the group may be down to its stragglers now
                speculate(now)
            continue
        state[i] = "tool"
        took = t.tools[t.attained.turns - 1]
        t.attained.service_s += took
        heapq.heappush(events, (now + took, next(seq), "tool", i))
    return _Run(end, served)


def lower_bound(trajs: list[_Traj], capacity: int) -> float:
    """max(longest chain of policy turns and tools, policy work / capacity)."""
    chain = max(sum(t.policy) + sum(t.tools) for t in trajs)
    return max(chain, sum(sum(t.policy) for t in trajs) / capacity)


RULES: dict[str, Callable[[], _Rule]] = {
    **{name: (lambda name=name: _EngineRule(name)) for name in SCHEDULES},  # type: ignore[misc]
    "estimate": _Estimate, "oracle": _Oracle}


def _ratios(args: argparse.Namespace, member: Member, capacity: int) -> tuple[dict[str, list[float]], str]:
    ratios: dict[str, list[float]] = {name: [] for name in [*RULES, "estimate+relaunch", "estimate+oversample"]}
    launched = replaced = calls = 0
    base_s = spare_s = cancelled_s = over_s = 0.0
    for seed in range(1, args.seeds + 1):
        model = Model(seed=seed, policy_median_s=0.06, policy_sigma=0.6, tool_scale_s=0.02,
                      tool_alpha=1.5, tool_cap_s=2.0)
        bound = lower_bound(_workload(member, model, args.prompts, args.group), capacity)
        for name, rule in RULES.items():
            run = simulate(_workload(member, model, args.prompts, args.group), capacity, rule(), args.group)
            ratios[name].append(run.makespan / bound)
            if name == "estimate":
                base_s += run.policy_s
        spare = Relaunch(lambda g, k, model=model: member(model, int(g[1:]), k), args.relaunch_budget,
                         args.relaunch_stragglers)
        run = simulate(_workload(member, model, args.prompts, args.group), capacity, _Estimate(), args.group,
                       spare)
        ratios["estimate+relaunch"].append(run.makespan / bound)
        launched, replaced, calls = launched + spare.launched, replaced + spare.replaced, calls + args.prompts
        # The engine's over-sampling: one extra member for every group from the start, first finished kept.
        run = simulate(_workload(member, model, args.prompts, args.group + 1), capacity, _Estimate(), args.group)
        ratios["estimate+oversample"].append(run.makespan / bound)
        over_s += run.policy_s
        spare_s, cancelled_s = spare_s + spare.spare_policy_s, cancelled_s + spare.cancelled_policy_s
    cost = (f"relaunch (budget {args.relaunch_budget:.3f} spares per member): {launched / args.seeds:.1f} spares "
            f"per batch, kept in {replaced / calls:.1%} of groups; policy work +{spare_s / base_s:.1%} on spares, "
            f"{cancelled_s / base_s:.1%} of the estimate run's policy work cancelled; "
            f"oversample 1 per group: policy work +{over_s / base_s - 1:.1%}")
    return ratios, cost


def main(args: argparse.Namespace) -> None:
    """Print each rule's makespan / lower bound, mean and worst over the seeds."""
    print(f"slot scheduling, simulated: {args.prompts} prompts x group {args.group}, seeds 1..{args.seeds}; "
          f"lower bound of the batch without spares")
    for workload in args.workloads:
        for capacity in args.capacities:
            ratios, cost = _ratios(args, WORKLOADS[workload], capacity)
            print(f"workload {workload}, upstream capacity {capacity}:")
            base = sum(ratios["turns"]) / len(ratios["turns"])
            for name, values in ratios.items():
                mean = sum(values) / len(values)
                print(f"  {name:17s} mean {mean:.3f}x lower bound ({mean / base:.3f}x turns), "
                      f"worst {max(values):.3f}x, seed 7 {values[6] if len(values) > 6 else float('nan'):.3f}x")
            print(f"  {cost}")
            means = {name: sum(values) / len(values) for name, values in ratios.items()}
            figure = f"makespan / lower bound, estimate, workload {workload}, capacity {capacity}"
            for baseline in ("fifo", "oracle"):
                headline("rollout_sched", figure, means["estimate"], means[baseline],
                         baseline_name=f"{baseline} (mean)", unit="x lower bound", higher_is_better=False)


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--capacities", type=lambda v: [int(x) for x in v.split(",")], default=[128, 256, 512])
    ap.add_argument("--workloads", type=lambda v: v.split(","), default=list(WORKLOADS),
                    help=f"comma-separated, of: {', '.join(WORKLOADS)}")
    ap.add_argument("--relaunch-budget", type=float, default=1 / 8,
                    help="spare members the relaunch may start, per member of the batch")
    ap.add_argument("--relaunch-stragglers", type=int, default=2,
                    help="relaunch for groups waiting on at most this many members")
    return ap.parse_args()


if __name__ == "__main__":
    main(_args())
