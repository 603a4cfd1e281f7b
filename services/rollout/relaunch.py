"""Speculative relaunch of stragglers: spend idle upstream capacity on spare members.

At the end of a batch most groups are complete and slots go idle while a few
groups wait on their last members, whose chains set the makespan. When a slot
would otherwise go idle, ``RelaunchPolicy`` picks a group that waits on at
most ``stragglers`` running members and has no spare yet, and the engine
starts one spare member of that prompt from scratch (a fresh sample with its
own sample index and seed stream). The group keeps the first ``group_size``
members that finish, exactly as with over-sampling; the ones still running
are cancelled and recorded as cut. The spare budget is a fraction of the
members started (``budget=0.125``: at most one spare per 8 members), and what
the spares and the cancelled members cost is counted (``RelaunchCost``).

A kept spare replaces a slower member, so the kept set leans toward shorter
trajectories, as with over-sampling: spares are marked (``metadata["spare"]``)
and every cut member is listed with its stop reason, so the bias can be
measured.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel

from shared.errors import InvalidInput

__all__ = ["Candidate", "RelaunchCost", "RelaunchPolicy"]


@dataclass(frozen=True)
class Candidate:
    """A group that could take a spare: what it still waits on, and its most urgent straggler's key."""

    group: str
    needed: int  # members it still needs to finish
    running: int  # members still running, spares included
    spares: int  # spares it already has running
    key: float  # the scheduling rule's key of its most urgent running member (lower is more urgent)


class RelaunchCost(BaseModel):
    """What relaunching cost, in upstream work, and what it bought."""

    spares: int = 0  # spare members started
    spares_kept: int = 0  # spares among the kept members (each replaced a slower member)
    spare_policy_calls: int = 0
    spare_completion_tokens: int = 0
    cut_policy_calls: int = 0  # calls of members that ended cut (spares or stragglers), i.e. wasted work
    cut_completion_tokens: int = 0


@dataclass
class RelaunchPolicy:
    """Which group gets a spare, and whether the budget allows one."""

    budget: float  # spares per member started
    stragglers: int = 2  # a group qualifies when it waits on at most this many members
    members: int = 0  # members started (not spares)
    spares: int = 0  # spares started

    def __post_init__(self) -> None:
        if not 0 <= self.budget <= 1:
            raise InvalidInput("relaunch budget must be within 0..1 spares per member", param="relaunch")
        if self.stragglers < 1:
            raise InvalidInput("relaunch stragglers must be >= 1", param="relaunch_stragglers")

    @property
    def enabled(self) -> bool:
        """Whether any spare may ever be started."""
        return self.budget > 0

    def allowed(self) -> bool:
        """Whether one more spare fits the budget."""
        return self.spares + 1 <= self.budget * self.members + 1e-9

    def qualifies(self, c: Candidate) -> bool:
        """A group down to its stragglers, all of them originals (one spare per group at a time)."""
        return 0 < c.needed <= self.stragglers and c.running == c.needed and c.spares == 0

    def pick(self, candidates: Iterable[Candidate]) -> Candidate | None:
        """The qualifying group whose straggler the rule ranks most urgent, if the budget allows one."""
        if not self.allowed():
            return None
        best = min((c for c in candidates if self.qualifies(c)), key=lambda c: (c.key, c.group), default=None)
        if best is not None:
            self.spares += 1
        return best
