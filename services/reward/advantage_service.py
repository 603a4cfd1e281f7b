"""Advantages for request groups: missing or non-finite rewards are masked, never fatal."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from services.reward.advantages import Floats, grpo, grpo_per_step, reinforce_pp, rloo
from services.reward.schemas import AdvantageGroup, AdvantageGroupResult, AdvantagesRequest, AdvantagesResponse

__all__ = ["compute_advantages"]


def _outcome(group: AdvantageGroup, req: AdvantagesRequest) -> AdvantageGroupResult:
    rewards = group.rewards or []
    good = [i for i, r in enumerate(rewards) if r is not None and math.isfinite(r)]
    adv = [0.0] * len(rewards)
    error = None if len(good) == len(rewards) else f"{len(rewards) - len(good)} missing or non-finite rewards masked"
    if len(good) >= req.min_group_size:
        values = np.array([rewards[i] for i in good], dtype=np.float64)
        estimators: dict[str, Callable[[Any], Floats]] = {"grpo": grpo, "rloo": rloo, "reinforce_pp": reinforce_pp}
        fn = estimators[req.estimator]
        for i, a in zip(good, fn(values)):
            adv[i] = float(a)
        masked = set(good) if not (req.zero_std == "mask" and float(values.std()) == 0.0) else set()
    else:
        masked = set()
    return AdvantageGroupResult(advantages=[[a] for a in adv],
                                masks=[[int(i in masked)] for i in range(len(rewards))], error=error)


def _per_step(group: AdvantageGroup, req: AdvantagesRequest) -> AdvantageGroupResult:
    steps = group.step_rewards or [[r] for r in group.rewards or [] if r is not None]
    if any(not math.isfinite(x) for s in steps for x in s):
        return AdvantageGroupResult(advantages=[[0.0] * len(s) for s in steps],
                                    masks=[[0] * len(s) for s in steps], error="non-finite step reward")
    adv, masks = grpo_per_step(steps, min_group_size=req.min_group_size, zero_std=req.zero_std)
    return AdvantageGroupResult(advantages=adv, masks=masks)


def compute_advantages(req: AdvantagesRequest) -> AdvantagesResponse:
    """Advantages and masks for every group with the requested estimator."""
    run = _per_step if req.estimator == "grpo_per_step" else _outcome
    return AdvantagesResponse(groups=[run(g, req) for g in req.groups])
