"""Reward specs: which components run, with which params and weights, and their combination."""

from __future__ import annotations

import hashlib
import math
from typing import Any

import orjson
from pydantic import BaseModel, Field, field_validator

from services.reward.registry import get_component
from shared.schema import RewardRecord, Trajectory

__all__ = ["SKILL_WEIGHT_NAMES", "ComponentSpec", "RewardSpec", "run_spec", "spec_hash"]

# Skill YAML ``reward_weights`` keys and the components they name.
SKILL_WEIGHT_NAMES = {"tool_accuracy": "tool_call", "answer_f1": "answer", "reasoning_quality": "reasoning_quality"}


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

    @classmethod
    def from_skill_weights(cls, weights: dict[str, float], **params: dict[str, Any]) -> RewardSpec:
        """A spec from a skill YAML's ``reward_weights`` (tool_accuracy, answer_f1, reasoning_quality)."""
        comps = [ComponentSpec(name=SKILL_WEIGHT_NAMES.get(k, k), weight=float(w),
                               params=params.get(SKILL_WEIGHT_NAMES.get(k, k), {})) for k, w in weights.items()]
        return cls(components=comps)

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
