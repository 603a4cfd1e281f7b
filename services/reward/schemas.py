"""Request and response models of the reward REST API."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from shared.schema import Trajectory
from services.reward.service import ScoredTrajectory
from services.reward.spec import RewardSpec

__all__ = ["AdvantageGroup", "AdvantageGroupResult", "AdvantagesRequest", "AdvantagesResponse",
           "ScoreRequest", "ScoreResponse"]


class ScoreRequest(BaseModel):
    """Trajectories, optional per-trajectory ground truths, and the reward spec."""

    trajectories: list[Trajectory]
    ground_truths: list[dict[str, Any] | None] | None = None
    spec: RewardSpec = Field(default_factory=RewardSpec)


class ScoreResponse(BaseModel):
    """One result per trajectory, in request order."""

    results: list[ScoredTrajectory]


class AdvantageGroup(BaseModel):
    """One group: a final reward per member, or per-step rewards per member (ragged allowed)."""

    rewards: list[float | None] | None = None
    step_rewards: list[list[float]] | None = None


class AdvantagesRequest(BaseModel):
    """Groups and the estimator to use."""

    groups: list[AdvantageGroup]
    estimator: Literal["grpo", "rloo", "reinforce_pp", "grpo_per_step"] = "grpo"
    min_group_size: int = Field(default=2, ge=1)
    zero_std: Literal["zero", "mask"] = "zero"


class AdvantageGroupResult(BaseModel):
    """Per-member advantages (per step for the per-step estimator) and masks."""

    advantages: list[list[float]]
    masks: list[list[int]]
    error: str | None = None


class AdvantagesResponse(BaseModel):
    """One result per group, in request order."""

    groups: list[AdvantageGroupResult]
