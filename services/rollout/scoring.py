"""Scoring a finished group: reward per member, then GRPO advantages within the group.

A member's reward is its reward-spec total when the job has a spec (computed by the
reward service, handed in as ``scored``), else the env's episode reward when it ran
in an env, else none. Members without a
reward (a failed score, a rollout error) get no advantage and are left out
of the group's statistics rather than counted as zero. Advantages come from
``shared.advantages`` (the same functions as ``POST /v1/advantages``).

Per-step GRPO (``estimator="grpo_per_step"``): member i's reward at turn t is
the env's reward for that turn's tool calls (0 for a turn that ran none), with
the spec total, when the job has a spec, added to the last turn. A member with
no reward has every step masked. The advantages land in
``metadata["step_advantages"]`` (one per ``steps`` entry) with
``metadata["step_advantage_mask"]``; the export spreads them on each turn's tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from shared.advantages import group_advantages, step_advantages
from shared.schema import ScoredTrajectory, Trajectory

__all__ = ["GroupScores", "score_group", "step_rewards_of", "truth_of"]


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


def step_rewards_of(traj: Trajectory, reward: float | None, *, spec_total: bool) -> list[float | None]:
    """Member reward per turn for per-step GRPO (see the module docstring)."""
    if reward is None:
        return [None] * len(traj.steps)
    per_turn: list[float | None] = [float(s.reward or 0.0) for s in traj.steps]
    if spec_total and per_turn:
        per_turn[-1] = (per_turn[-1] or 0.0) + reward
    return per_turn


def score_group(trajs: list[Trajectory], *, has_spec: bool = False,
                estimator: Literal["grpo", "grpo_per_step"] = "grpo",
                scored: Sequence[ScoredTrajectory | None] | None = None, pending: bool = False) -> GroupScores:
    """Write each member's ``reward`` and ``advantage`` (and per-step advantages) into its metadata.

    ``scored`` (one per member) are the results the reward service computed for the job's spec
    (``has_spec``); ``pending`` means the spec could not be applied yet (the reward service was
    down): no member gets a reward.
    """
    out = GroupScores()
    for i, traj in enumerate(trajs):
        one = scored[i] if scored is not None else None
        out.scored.append(one)
        out.rewards.append(None if pending else _reward(traj, one))
    group = group_advantages(out.rewards)
    out.advantages = [a if r is not None else None for a, r in zip(group.advantages, out.rewards, strict=True)]
    for traj, reward, adv in zip(trajs, out.rewards, out.advantages, strict=True):
        traj.metadata["reward"], traj.metadata["advantage"] = reward, adv
    if estimator == "grpo_per_step":
        steps = [step_rewards_of(t, r, spec_total=has_spec) for t, r in zip(trajs, out.rewards, strict=True)]
        per_step = step_advantages(steps)
        for traj, adv_t, mask_t in zip(trajs, per_step.advantages, per_step.mask, strict=True):
            traj.metadata["step_advantages"], traj.metadata["step_advantage_mask"] = adv_t, mask_t
    return out
