"""Reward specs (the shape is ``shared.schema.reward_spec``): checking one against this service's
components, and running it on a trajectory."""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import AfterValidator

from services.reward.errors import RewardSpecError, UnknownComponent
from services.reward.registry import get_component
from shared.schema import RewardRecord, Trajectory
from shared.schema.reward_spec import SKILL_WEIGHT_NAMES, ComponentSpec, RewardSpec, spec_hash

__all__ = ["SKILL_WEIGHT_NAMES", "CheckedRewardSpec", "ComponentSpec", "RewardSpec", "check_spec", "checked_params",
           "run_spec", "spec_hash"]


def check_spec(spec: RewardSpec) -> None:
    """Refuse a spec this service cannot run: UnknownComponent for a name no component has (with the list),
    RewardSpecError for params a component does not take."""
    for i, comp in enumerate(spec.components):
        get_component(comp.name).check_params(comp.params, where=f"components.{i}.params")


def checked_params(spec: RewardSpec) -> RewardSpec:
    """``spec`` when every registered component in it takes its params (a pydantic after-validator).

    An unknown name is left for ``check_spec`` where the spec is used (UnknownComponent, with the list).
    """
    for comp in spec.components:
        try:
            component = get_component(comp.name)
        except UnknownComponent:
            continue
        try:
            component.check_params(comp.params)
        except RewardSpecError as exc:
            raise ValueError(exc.message) from None
    return spec


#: A reward spec in this service's requests: its components' params are checked as it is parsed.
CheckedRewardSpec = Annotated[RewardSpec, AfterValidator(checked_params)]


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
