"""Scoring a finished group: reward per member, then GRPO advantages within the group.

A member's reward is its reward-spec total when the job has a spec, else the
env's episode reward when it ran in an env, else none. Members without a
reward (a failed score, a rollout error) get no advantage and are left out
of the group's statistics rather than counted as zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from services.reward.advantages import grpo
from services.reward.service import ScoredTrajectory, score_trajectory
from services.reward.spec import RewardSpec
from shared.schema import Trajectory

__all__ = ["GroupScores", "score_group", "truth_of"]


@dataclass
class GroupScores:
    """Per-member scored results (spec only), rewards and advantages, in member order."""

    scored: list[ScoredTrajectory | None] = field(default_factory=list)
    rewards: list[float | None] = field(default_factory=list)
    advantages: list[float | None] = field(default_factory=list)


def truth_of(ground_truth: Any) -> dict[str, Any] | None:
    """A task's ground truth as the reward spec reads it (a bare value is the expected answer)."""
    if ground_truth is None or isinstance(ground_truth, dict):
        return ground_truth
    return {"answer": ground_truth}


def _reward(traj: Trajectory, scored: ScoredTrajectory | None) -> float | None:
    if scored is not None:
        return scored.score
    value = traj.metadata.get("env_reward")
    return float(value) if isinstance(value, int | float) else None


def score_group(trajs: list[Trajectory], spec: RewardSpec | None, ground_truth: Any, *,
                scored: Sequence[ScoredTrajectory | None] | None = None, pending: bool = False) -> GroupScores:
    """Score every member and write ``reward`` and ``advantage`` into its metadata.

    ``scored`` (one per member) are results the reward service computed; ``pending`` means the
    job's spec could not be applied yet (the reward service was down): no member gets a reward.
    """
    out = GroupScores()
    truth = truth_of(ground_truth)
    for i, traj in enumerate(trajs):
        if scored is not None:
            one = scored[i]
        else:
            one = score_trajectory(traj, spec, truth) if spec is not None and not pending else None
        out.scored.append(one)
        out.rewards.append(None if pending else _reward(traj, one))
    present = [i for i, r in enumerate(out.rewards) if r is not None]
    values = [float(v) for v in grpo([out.rewards[i] or 0.0 for i in present])] if present else []
    by_member = {i: v for i, v in zip(present, values, strict=True)}
    out.advantages = [by_member.get(i) for i in range(len(trajs))]
    for traj, reward, adv in zip(trajs, out.rewards, out.advantages, strict=True):
        traj.metadata["reward"], traj.metadata["advantage"] = reward, adv
    return out
