"""Request and response models of the reward REST API."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field

from services.reward.service import ScoredTrajectory
from services.reward.spec import CheckedRewardSpec, RewardSpec
from shared.schema import Trajectory

__all__ = ["AdvantageGroup", "AdvantageGroupResult", "AdvantagesRequest", "AdvantagesResponse",
           "GroundTruthSource", "ProcessorRef", "RecordRequest", "RecordResponse",
           "RescoreProgress", "RescoreRequest", "RescoreStarted",
           "ScoreRequest", "ScoreResponse", "SpecCheckRequest", "SpecCheckResponse"]

#: Where a stored trajectory's ground truth is read: ``meta.ground_truth``, ``meta.rollout_extra.solution``,
#: or the first of the two that is present (``auto``).
GroundTruthSource = Literal["auto", "meta", "solution"]


class ProcessorRef(BaseModel):
    """A user reward processor loaded by classpath (only from the modules the server allows)."""

    classpath: str = Field(min_length=1, max_length=300)
    name: str | None = Field(default=None, max_length=100)
    weight: float = 1.0
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    concurrency: int = Field(default=4, ge=1, le=64)
    kwargs: dict[str, Any] = Field(default_factory=dict)


class ScoreRequest(BaseModel):
    """Trajectories, optional per-trajectory ground truths, and the reward spec."""

    trajectories: list[Trajectory]
    ground_truths: list[dict[str, Any] | None] | None = None
    spec: CheckedRewardSpec = Field(default_factory=RewardSpec)
    processors: list[ProcessorRef] = Field(default_factory=list)


class SpecCheckRequest(BaseModel):
    """A reward spec to check against this service's components (nothing is scored or stored)."""

    spec: CheckedRewardSpec


class SpecCheckResponse(BaseModel):
    """The checked spec's hash: the name its scores are kept under."""

    spec_hash: str


class ScoreResponse(BaseModel):
    """One result per trajectory, in request order."""

    results: list[ScoredTrajectory]


class RecordRequest(BaseModel):
    """Scores this service computed (``/v1/rewards/score``) for trajectories now stored, to keep with provenance.

    ``trajectory_id`` of each result names the stored trajectory, ``job_id`` the rollout job that
    stored them (kept on the rows, so a later re-score of the job counts them); recording the
    same results twice stores each score once (keyed by trajectory, component and the spec's hash).
    """

    spec: CheckedRewardSpec
    results: list[ScoredTrajectory] = Field(max_length=10_000)
    job_id: uuid.UUID | None = None


class RecordResponse(BaseModel):
    """The spec's hash and how many score rows were newly written."""

    spec_hash: str
    inserted: int


class AdvantageGroup(BaseModel):
    """One group: a final reward per member, or per-step rewards per member (ragged allowed)."""

    rewards: list[float | None] | None = None
    step_rewards: list[list[float | None]] | None = None


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


class RescoreRequest(BaseModel):
    """A new reward spec for every stored trajectory of a rollout job."""

    spec: CheckedRewardSpec
    ground_truth_source: GroundTruthSource = "auto"


class RescoreStarted(BaseModel):
    """The job reference of a re-scoring run: poll ``status_url`` for progress."""

    job_id: str
    spec_hash: str
    total: int
    batches: int
    status_url: str


class RescoreProgress(BaseModel):
    """Trajectories of the job by outcome under one spec."""

    job_id: str
    spec_hash: str
    total: int
    scored: int
    failed: int
    skipped: int
    pending: int
    done: bool
