"""Reward specs (which components run, with which params and weights, and their combination) and the
scores the reward service keeps for them.

The shape every service speaks (a rollout job carries one, the reward service scores with it, its
hash names the scores kept). Whether a spec's component names and params are ones the reward
service can run is the reward service's to answer (``services.reward.spec.check_spec``, or
``POST /v1/rewards/check`` from another service): its registry is not part of the shape.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from datetime import datetime
from typing import Any

import orjson
from pydantic import BaseModel, Field, field_validator

from shared.errors import InvalidInput
from shared.schema.functions import RewardFunctionComponent
from shared.skills import SKILL_WEIGHT_KEYS, SkillSpec

__all__ = ["SKILL_WEIGHT_NAMES", "TOTAL_COMPONENT", "ComponentSpec", "JobRewardSummary", "RewardSpec",
           "RewardProvenance", "RewardSpecError", "StoredReward", "StoredRewardPage", "StoredRewardQuery", "spec_hash"]

#: Component name of the per-trajectory score holding a spec's weighted total and status.
TOTAL_COMPONENT = "total"

#: Skill YAML ``reward_weights`` keys → (component, params that pick the measure).
SKILL_WEIGHT_NAMES: dict[str, tuple[str, dict[str, Any]]] = {
    "tool_accuracy": ("tool_accuracy", {}),
    "answer_f1": ("answer_f1", {}),
    "reasoning_quality": ("reasoning_quality", {}),
    "format": ("audit", {"measure": "format"}),
    "audit": ("audit", {"measure": "rules"}),
}


class RewardSpecError(InvalidInput):
    """A reward spec or ground truth that cannot be used as given."""

    code = "invalid_reward_spec"


class ComponentSpec(BaseModel):
    """One component in a spec; weight 0 means "report as a metric only"."""

    name: str
    weight: float = 1.0
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("weight")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("weight must be a finite number")
        return value


class RewardSpec(BaseModel):
    """A weighted list of components; the score is Σ weight·score over non-zero weights."""

    components: list[ComponentSpec] = Field(default_factory=lambda: [ComponentSpec(name="tool_call")])
    normalise: bool = False
    #: Uploaded reward function components, run in the functions service's workers; each adds
    #: ``weight`` × its score to the total (several combined by weight, 0 = reported only).
    functions: list[RewardFunctionComponent] = Field(default_factory=list)

    @field_validator("functions")
    @classmethod
    def _function_components(cls, value: list[RewardFunctionComponent]) -> list[RewardFunctionComponent]:
        names = [f.name for f in value]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ValueError(f"reward component names must be unique; repeated: {', '.join(duplicated)}")
        if value and sum(f.weight for f in value) == 0:
            raise ValueError("the reward components' weights sum to 0: give at least one a non-zero weight")
        missing = [f.name for f in value if not f.fcmodel.package_id]
        if missing:
            raise ValueError(f"fcmodel.package_id is required (upload with POST /v1/functions): {', '.join(missing)}")
        return value

    @classmethod
    def from_skill_weights(cls, weights: dict[str, float], **params: dict[str, Any]) -> RewardSpec:
        """A spec from a skill's ``reward_weights``; ``params`` are extra params per component name."""
        unknown = sorted(set(weights) - set(SKILL_WEIGHT_KEYS))
        if unknown:
            raise RewardSpecError(f"unknown reward weight {unknown[0]!r}; known: {', '.join(SKILL_WEIGHT_KEYS)}",
                                  param=f"reward_weights.{unknown[0]}")
        comps = []
        for key, weight in weights.items():
            name, preset = SKILL_WEIGHT_NAMES[key]
            comps.append(ComponentSpec(name=name, weight=float(weight), params={**preset, **params.get(name, {})}))
        return cls(components=comps)

    @classmethod
    def from_skill(cls, skill: SkillSpec) -> RewardSpec:
        """The reward spec a skill YAML describes: its weights, with its tools, answer format and rules."""
        fields = list(skill.answer_format.required_fields)
        rules = [r.model_dump() for r in skill.audit_rules]
        tools = {"available_tools": list(skill.available_tools)} if skill.available_tools else {}
        return cls.from_skill_weights(
            skill.reward_weights,
            tool_accuracy=tools,
            answer_f1={"required_fields": fields},
            audit={"answer_format": {"required_fields": fields}, "audit_rules": rules},
        )


def spec_hash(spec: RewardSpec) -> str:
    """A stable SHA-256 of the spec's canonical JSON (key order and defaults do not change it)."""
    canonical = orjson.dumps(spec.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


class RewardProvenance(BaseModel):
    """One kept score and exactly how it was made (component, version, params, spec, weight).

    ``component`` is a component's name, or ``total`` for the spec's weighted total (its status says
    whether the trajectory was scored, failed or skipped).
    """

    component: str
    version: str
    params: dict[str, Any] = Field(default_factory=dict)
    spec_hash: str | None = None
    weight: float
    score: float | None
    metrics: dict[str, Any] = Field(default_factory=dict)
    status: str
    error: str | None = None
    created_at: datetime


class StoredReward(RewardProvenance):
    """One score the reward service keeps for a stored trajectory: its provenance and whose it is."""

    trajectory_id: str
    job_id: str | None = None


class StoredRewardQuery(BaseModel):
    """Which trajectories' kept scores to read (every spec's), optionally only some components."""

    trajectory_ids: list[uuid.UUID] = Field(max_length=1000)
    components: list[str] | None = Field(default=None, max_length=100)


class StoredRewardPage(BaseModel):
    """Kept scores, oldest first (a later row is a newer spec's, or a re-score's)."""

    items: list[StoredReward] = Field(default_factory=list)


class JobRewardSummary(BaseModel):
    """What the scores kept for one rollout job's trajectories add up to."""

    job_id: str
    #: Mean score of each component (totals aside) over every kept score of the job, by name.
    components: dict[str, float] = Field(default_factory=dict)
