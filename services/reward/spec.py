"""Reward specs: which components run, with which params and weights, and their combination."""

from __future__ import annotations

import hashlib
import math
from typing import Any

import orjson
from pydantic import BaseModel, Field, field_validator, model_validator

from services.reward.errors import RewardSpecError, UnknownComponent
from services.reward.registry import get_component
from shared.schema import RewardRecord, Trajectory
from shared.schema.functions import RewardFunctionComponent
from shared.skills import SKILL_WEIGHT_KEYS, SkillSpec

__all__ = ["SKILL_WEIGHT_NAMES", "ComponentSpec", "RewardSpec", "run_spec", "spec_hash"]

#: Skill YAML ``reward_weights`` keys → (component, params that pick the measure).
SKILL_WEIGHT_NAMES: dict[str, tuple[str, dict[str, Any]]] = {
    "tool_accuracy": ("tool_accuracy", {}),
    "answer_f1": ("answer_f1", {}),
    "reasoning_quality": ("reasoning_quality", {}),
    "format": ("audit", {"measure": "format"}),
    "audit": ("audit", {"measure": "rules"}),
}


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

    @model_validator(mode="after")
    def _known_params(self) -> ComponentSpec:
        # An unknown component name is reported when the spec is used (UnknownComponent, with the list).
        try:
            component = get_component(self.name)
        except UnknownComponent:
            return self
        try:
            component.check_params(self.params)
        except RewardSpecError as exc:
            raise ValueError(exc.message) from None
        return self


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

    def validate_names(self) -> None:
        """Raise UnknownComponent for any name that is not registered."""
        for comp in self.components:
            get_component(comp.name)


def spec_hash(spec: RewardSpec) -> str:
    """A stable SHA-256 of the spec's canonical JSON (key order and defaults do not change it)."""
    canonical = orjson.dumps(spec.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


def _run_one(comp: ComponentSpec, traj: Trajectory, ground_truth: dict[str, Any]) -> RewardRecord:
    component = get_component(comp.name)
    base: dict[str, Any] = {"component": component.name, "version": component.version, "params": comp.params,
                            "weight": comp.weight}
    try:
        result = component(traj, ground_truth, **comp.params)
    except Exception as exc:  # noqa: BLE001 - untrusted data: any failure belongs to this trajectory
        # A bad ground truth or output for one trajectory is recorded, never raised to the batch.
        return RewardRecord(**base, status="failed", error=f"{type(exc).__name__}: {exc}")
    if not math.isfinite(result.score):
        return RewardRecord(**base, status="failed", error="component returned a non-finite score")
    return RewardRecord(**base, score=result.score, metrics=result.metrics)


def run_spec(
    spec: RewardSpec, traj: Trajectory, ground_truth: dict[str, Any]
) -> tuple[float | None, list[RewardRecord]]:
    """Every component's record and the weighted total (None when a weighted component failed)."""
    records = [_run_one(comp, traj, ground_truth) for comp in spec.components]
    weighted = [(r.weight, r.score) for r in records if r.weight != 0]
    if any(score is None for _, score in weighted):
        return None, records
    total = sum(w * (s or 0.0) for w, s in weighted)
    if spec.normalise and weighted:
        total /= sum(abs(w) for w, _ in weighted)
    return total, records
