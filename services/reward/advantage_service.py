"""Advantages for request groups, by the shared group functions (``shared.advantages``).

Missing or non-finite rewards are masked, never dropped: every group's result
has one entry per member (per step for ``grpo_per_step``), with mask 0 and a
note in ``error`` where a reward was missing. The rollout shard runs the same
functions, so a stored group and this endpoint agree.
"""

from __future__ import annotations

from services.reward.schemas import AdvantageGroup, AdvantageGroupResult, AdvantagesRequest, AdvantagesResponse
from shared.advantages import group_advantages, step_advantages

__all__ = ["compute_advantages"]


def _outcome(group: AdvantageGroup, req: AdvantagesRequest) -> AdvantageGroupResult:
    estimator = "grpo" if req.estimator == "grpo_per_step" else req.estimator
    out = group_advantages(group.rewards or [], estimator=estimator, min_group_size=req.min_group_size,
                           zero_std=req.zero_std)
    return AdvantageGroupResult(advantages=[[a] for a in out.advantages], masks=[[m] for m in out.mask],
                                error=out.error)


def _per_step(group: AdvantageGroup, req: AdvantagesRequest) -> AdvantageGroupResult:
    # A group given as final rewards is a one-step episode per member; a None reward stays a masked step.
    steps = group.step_rewards if group.step_rewards is not None else [[r] for r in group.rewards or []]
    out = step_advantages(steps, min_group_size=req.min_group_size, zero_std=req.zero_std)
    return AdvantageGroupResult(advantages=out.advantages, masks=out.mask, error=out.error)


def compute_advantages(req: AdvantagesRequest) -> AdvantagesResponse:
    """Advantages and masks for every group with the requested estimator."""
    run = _per_step if req.estimator == "grpo_per_step" else _outcome
    return AdvantagesResponse(groups=[run(g, req) for g in req.groups])
