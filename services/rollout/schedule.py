"""Which waiting policy request the engine serves first when the upstream is saturated.

Each rule maps what a trajectory has been through so far to a priority key
(lower is served first, ties by arrival). The key is fixed when the request
starts waiting, so the slot queue stays a plain heap:

- ``estimate`` (default): most *estimated* remaining work first, from
  ``services.rollout.estimate.RemainingWork`` (per-tool latency history, the
  trajectory's own per-turn cost, the turn counts of finished trajectories
  and the progress of the group's siblings). ``Scheduler`` feeds the
  estimator as policy calls, tool phases, turns and groups end.
- ``turns``: fewest turns done first, the one signal of remaining work that
  needs no history (a trajectory that has done fewer turns has more left).
- ``waited``: longest accumulated queueing first (the key is the arrival time
  minus the time already spent queued), which spreads queueing evenly.
- ``service``: least attained service first (own policy + tool seconds so far).
- ``fifo``: arrival order.

Why ``estimate`` is the default (bench/rollout.py, the real engine on a
virtual clock, so the figures are its decisions and not the machine's load;
64 prompts x 8, heavy-tailed tools, upstream capacity 128, seeds 1-5 and 7):
makespan 1.02-1.19x the lower bound, mean 1.092x, against ``turns`` 1.127x
and ``fifo`` 1.132x (ahead on three seeds by 0.06-0.09x, equal on one,
behind on two by under 0.01x); at capacity 256 every rule is at 1.00-1.04x, because the
upstream hardly queues. The remaining gap is the longest chains' own
length, which an order cannot shorten; relaunching stragglers
(``services.rollout.relaunch``) trades upstream work for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from services.rollout.estimate import Progress, RemainingWork
from shared.errors import InvalidInput

__all__ = ["DEFAULT_SCHEDULE", "SCHEDULES", "Attained", "Schedule", "Scheduler", "estimated_key", "priority_key"]

Schedule = Literal["turns", "waited", "service", "fifo", "estimate"]
SCHEDULES: tuple[Schedule, ...] = ("turns", "waited", "service", "fifo", "estimate")
DEFAULT_SCHEDULE: Schedule = "estimate"


@dataclass
class Attained:
    """What one trajectory has been through: turns done, seconds queued, seconds served (policy + tools),
    and the parts of it the estimate rule and the relaunch cost accounting read."""

    turns: int = 0
    waited_s: float = 0.0
    service_s: float = 0.0
    policy_s: float = 0.0  # seconds holding a slot (policy calls)
    tool_s: float = 0.0  # seconds in tool phases
    tool_calls: int = 0  # tool phases done
    tool: str | None = None  # the tool it called last
    policy_calls: int = 0  # calls sent, retries and cancelled ones included
    completion_tokens: int = 0  # tokens sampled by its finished calls


def priority_key(schedule: Schedule, attained: Attained, now: float) -> float:
    """The slot-queue key of a request arriving at ``now`` (monotonic seconds) under ``schedule``."""
    if schedule == "turns":
        return float(attained.turns)
    if schedule == "waited":
        return now - attained.waited_s
    if schedule == "service":
        return attained.service_s
    if schedule == "estimate":
        raise InvalidInput("the estimate rule needs its estimator: use Scheduler.key", param="schedule")
    return now


def estimated_key(estimator: RemainingWork, progress: Progress) -> float:
    """The slot-queue key of the estimate rule: the most expected remaining seconds first."""
    return -estimator.remaining_s(progress)


class Scheduler:
    """One engine's scheduling rule and what it observes; the episode calls its hooks as work ends.

    Only the ``estimate`` rule keeps an estimator; for the others the hooks cost nothing.
    """

    def __init__(self, schedule: Schedule = DEFAULT_SCHEDULE, *, max_turns: int = 8) -> None:
        if schedule not in SCHEDULES:
            raise InvalidInput(f"schedule must be one of {', '.join(SCHEDULES)}", param="schedule")
        self.schedule = schedule
        self.estimator = RemainingWork(max_turns=max_turns) if schedule == "estimate" else None

    def key(self, group: str, member: int, attained: Attained, now: float) -> float:
        """The slot-queue key of a request of ``member`` of ``group`` arriving at ``now``."""
        if self.estimator is None:
            return priority_key(self.schedule, attained, now)
        return estimated_key(self.estimator, progress_of(group, member, attained))

    def policy_done(self, seconds: float) -> None:
        """A policy call held its slot for ``seconds``."""
        if self.estimator is not None:
            self.estimator.observe_policy(seconds)

    def tool_done(self, tool: str | None, seconds: float) -> None:
        """A trajectory's tool phase (the calls of one turn, named by the first) took ``seconds``."""
        if self.estimator is not None:
            self.estimator.observe_tool(tool or "", seconds)

    def turn_done(self, group: str, member: int, turns: int, *, finished: bool) -> None:
        """``member`` of ``group`` has done ``turns`` turns and goes on, or ended (``finished``)."""
        if self.estimator is None:
            return
        if finished:
            self.estimator.observe_finished(group, member, turns)
        else:
            self.estimator.observe_turn(group, member, turns)

    def group_done(self, group: str) -> None:
        """``group`` is complete: its cancelled members are no evidence of anything."""
        if self.estimator is not None:
            self.estimator.forget_group(group)


def progress_of(group: str, member: int, attained: Attained) -> Progress:
    """What the estimator is told about one trajectory."""
    return Progress(group=group, member=member, turns=attained.turns, tool=attained.tool,
                    policy_s=attained.policy_s, tool_s=attained.tool_s, tool_calls=attained.tool_calls)
