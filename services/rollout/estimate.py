"""Estimates of a trajectory's remaining work from what is known at each turn.

A slot queue that serves the trajectory with the most work left first gets
close to the lower bound (bench/rollout_sched.py's oracle), but the work left
is not known. ``RemainingWork`` estimates it online from what a rollout has
seen so far, with no knowledge of the future:

- how many turns trajectories take: the finished ones' turn counts, smoothed
  by a uniform prior over ``1..max_turns``, conditioned on the turns already
  done (a trajectory that has done ``k`` turns takes more than ``k``);
- the group's siblings: same prompt, so their turn counts are evidence about
  this one. Finished siblings count as observations and running siblings as
  censored ones (they take more than what they have done), on top of the
  global distribution weighted as ``sibling_prior`` pseudo-siblings;
- per-turn cost: policy seconds per call and tool seconds per call by tool
  name (its latency history), each blended with the trajectory's own mean so
  far (which reflects its prompt and response lengths) with weight
  ``own_weight`` per observed turn.

Everything is a running count or mean, so an estimate costs O(max_turns) plus
the group's size, and the result depends only on what was observed, in any
order. A group that is done is forgotten (``forget_group``): its finished
members stay in the turn counts, its cancelled ones leave no trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.errors import InvalidInput

__all__ = ["Progress", "RemainingWork"]


@dataclass(frozen=True)
class Progress:
    """What is known about one trajectory when its next policy request starts waiting."""

    group: str
    member: int
    turns: int
    tool: str | None = None  # the tool it called last: its next calls are likely of the same kind
    policy_s: float = 0.0  # its own policy seconds so far (over ``turns`` calls)
    tool_s: float = 0.0  # its own tool seconds so far (over ``turns - 1`` calls at most)
    tool_calls: int = 0


@dataclass
class _Mean:
    total: float = 0.0
    count: int = 0

    def add(self, value: float) -> None:
        self.total += value
        self.count += 1

    def value(self, prior: float, prior_weight: float = 1.0) -> float:
        return (self.total + prior * prior_weight) / (self.count + prior_weight)


@dataclass
class _Member:
    turns: int = 0
    finished: bool = False


@dataclass
class RemainingWork:
    """Online estimator of the seconds a trajectory still needs (policy turns + tools between them)."""

    max_turns: int
    policy_prior_s: float = 0.05
    tool_prior_s: float = 0.05
    turn_prior_weight: float = 1.0  # pseudo-trajectories spread uniformly over 1..max_turns
    sibling_prior: float = 2.0  # how many siblings the global distribution is worth within a group
    own_weight: float = 1.0  # weight of each of the trajectory's own observed calls against the pooled mean
    _finished: list[float] = field(default_factory=list, init=False)
    _running: list[int] = field(default_factory=list, init=False)  # running trajectories by turns done
    _groups: dict[str, dict[int, _Member]] = field(default_factory=dict, init=False)
    _policy: _Mean = field(default_factory=_Mean, init=False)
    _tools: dict[str, _Mean] = field(default_factory=dict, init=False)
    _all_tools: _Mean = field(default_factory=_Mean, init=False)

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise InvalidInput("max_turns must be >= 1", param="max_turns")
        if min(self.turn_prior_weight, self.sibling_prior) <= 0 or self.own_weight < 0:
            raise InvalidInput("prior weights must be positive", param="turn_prior_weight")
        self._finished = [0.0] * (self.max_turns + 1)
        self._running = [0] * (self.max_turns + 1)

    # ------------------------------------------------------------ observations

    def observe_policy(self, seconds: float) -> None:
        """One policy call took ``seconds`` of service (not counting queueing)."""
        self._policy.add(seconds)

    def observe_tool(self, name: str, seconds: float) -> None:
        """One call of tool ``name`` took ``seconds``."""
        self._tools.setdefault(name, _Mean()).add(seconds)
        self._all_tools.add(seconds)

    def observe_turn(self, group: str, member: int, turns: int) -> None:
        """Member ``member`` of ``group`` has done ``turns`` policy turns and goes on."""
        state = self._member(group, member)
        if state.finished:
            return
        self._running[state.turns] -= 1
        state.turns = min(max(turns, 0), self.max_turns)
        self._running[state.turns] += 1

    def observe_finished(self, group: str, member: int, turns: int) -> None:
        """Member ``member`` of ``group`` ended after ``turns`` policy turns."""
        state = self._member(group, member)
        if state.finished:
            return
        self._running[state.turns] -= 1
        state.turns, state.finished = min(max(turns, 1), self.max_turns), True
        self._finished[state.turns] += 1

    def forget_group(self, group: str) -> None:
        """``group`` is done: drop its members (the finished ones stay in the turn counts)."""
        for state in self._groups.pop(group, {}).values():
            if not state.finished:  # cancelled: it neither ended nor runs on
                self._running[state.turns] -= 1

    def _member(self, group: str, member: int) -> _Member:
        members = self._groups.setdefault(group, {})
        state = members.get(member)
        if state is None:
            state = members[member] = _Member()
            self._running[0] += 1
        return state

    # ------------------------------------------------------------ estimates

    def turn_distribution(self) -> list[float]:
        """P(a trajectory takes n turns) for n = 0..max_turns (index 0 is always 0).

        A Kaplan-Meier estimate: early in a batch the finished trajectories are the short ones, so
        running trajectories count as censored (they took more turns than they have done). The
        hazard at each n is blended with the uniform prior's with weight ``turn_prior_weight``.
        """
        ended, running = self._finished, self._running
        at_risk = 0.0
        risk = [0.0] * (self.max_turns + 2)
        for n in range(self.max_turns, 0, -1):  # survived n-1 turns: ended at >= n, or running past n-1
            at_risk += ended[n] + running[n]
            risk[n] = at_risk
        dist, survive = [0.0] * (self.max_turns + 1), 1.0
        w = self.turn_prior_weight
        for n in range(1, self.max_turns + 1):
            prior = 1.0 / (self.max_turns - n + 1)
            hazard = 1.0 if n == self.max_turns else (ended[n] + w * prior) / (risk[n] + w)
            dist[n], survive = survive * hazard, survive * (1.0 - hazard)
        return dist

    def group_distribution(self, group: str, exclude: int | None = None) -> list[float]:
        """The turn distribution within ``group``: the global one updated with the siblings' progress."""
        base = self.turn_distribution()
        weights = [p * self.sibling_prior for p in base]
        for member, state in self._groups.get(group, {}).items():
            if member == exclude:
                continue
            if state.finished:
                weights[state.turns] += 1.0
                continue
            tail = sum(base[state.turns + 1:])  # censored: it takes more than it has done
            if tail > 0:
                for n in range(state.turns + 1, self.max_turns + 1):
                    weights[n] += base[n] / tail
        total = sum(weights)
        return [w / total for w in weights]

    def turns_left(self, group: str, member: int, turns: int) -> float:
        """Expected policy turns still to come, the waiting one included (>= 1)."""
        if turns >= self.max_turns:
            return 1.0
        dist = self.group_distribution(group, exclude=member)
        tail = dist[turns + 1:]
        mass = sum(tail)
        if mass <= 0:
            return 1.0
        return sum((i + 1) * p for i, p in enumerate(tail)) / mass

    def policy_s(self, progress: Progress) -> float:
        """Expected seconds of one more policy call of this trajectory."""
        pooled = self._policy.value(self.policy_prior_s)
        weight = self.own_weight * progress.turns
        return (progress.policy_s * self.own_weight + pooled) / (weight + 1.0)

    def tool_s(self, progress: Progress) -> float:
        """Expected seconds of one more tool call of this trajectory."""
        pooled_all = self._all_tools.value(self.tool_prior_s)
        per_tool = self._tools.get(progress.tool) if progress.tool is not None else None
        pooled = per_tool.value(pooled_all) if per_tool is not None else pooled_all
        weight = self.own_weight * progress.tool_calls
        return (progress.tool_s * self.own_weight + pooled) / (weight + 1.0)

    def remaining_s(self, progress: Progress) -> float:
        """Expected seconds this trajectory still needs: its turns left and the tools between them."""
        left = self.turns_left(progress.group, progress.member, progress.turns)
        return left * self.policy_s(progress) + (left - 1.0) * self.tool_s(progress)
