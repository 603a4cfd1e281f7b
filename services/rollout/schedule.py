"""Which waiting policy request the engine serves first when the upstream is saturated.

Each rule maps what a trajectory has been through so far to a priority key
(lower is served first, ties by arrival). The key is fixed when the request
starts waiting, so the slot queue stays a plain heap:

- ``turns`` (default): fewest turns done first. Turn counts are the one signal
  of remaining work the engine has: with no other knowledge, a trajectory
  that has done fewer turns has more left, and the trajectory with the most
  work left sets the makespan.
- ``waited``: longest accumulated queueing first (the key is the arrival time
  minus the time already spent queued), which spreads queueing evenly.
- ``service``: least attained service first (own policy + tool seconds so far).
- ``fifo``: arrival order.

Measured (bench/rollout_sched.py replays bench/rollout.py's latency model
without the network, 30 seeds, upstream capacity 128): every rule lands at
1.10-1.12x the lower bound on average and differences between them are
smaller than the spread between seeds, while serving the trajectory with the
longest *actual* remaining work first (which needs to know the future) is at
1.005x. What is missing is knowledge of remaining work, not a better order;
``turns`` stays the default because no rule beat it.

``estimated_key`` is the rule that knows more: most *estimated* remaining work
first, from ``services.rollout.estimate.RemainingWork`` (per-tool latency
history, the trajectory's own per-turn cost, the turn counts of finished
trajectories and the progress of the group's siblings). It needs the engine
to feed the estimator as turns, tools and trajectories end, so it is not yet
one of ``SCHEDULES``; bench/rollout_sched.py measures it against the rules
above and the oracle. On bench/rollout.py's work, where trajectories are
independent and only the turn count carries information, it is within the
spread between seeds of ``turns`` (30 seeds, capacity 128: 1.09x against
1.10x the lower bound, with a worse worst case), so ``turns`` stays the default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from services.rollout.estimate import Progress, RemainingWork

__all__ = ["SCHEDULES", "Attained", "Schedule", "estimated_key", "priority_key"]

Schedule = Literal["turns", "waited", "service", "fifo"]
SCHEDULES: tuple[Schedule, ...] = ("turns", "waited", "service", "fifo")


@dataclass
class Attained:
    """What one trajectory has been through: turns done, seconds queued, seconds served (policy + tools)."""

    turns: int = 0
    waited_s: float = 0.0
    service_s: float = 0.0


def priority_key(schedule: Schedule, attained: Attained, now: float) -> float:
    """The slot-queue key of a request arriving at ``now`` (monotonic seconds) under ``schedule``."""
    if schedule == "turns":
        return float(attained.turns)
    if schedule == "waited":
        return now - attained.waited_s
    if schedule == "service":
        return attained.service_s
    return now


def estimated_key(estimator: RemainingWork, progress: Progress) -> float:
    """The slot-queue key of the estimate rule: the most expected remaining seconds first."""
    return -estimator.remaining_s(progress)
