"""Request bodies of the functions service (the contracts themselves live in ``shared.schema.functions``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shared.schema.functions import RewardFunctionComponent, RewardInput, RolloutFunctionComponent, RolloutInput

__all__ = ["PoolsPage", "RewardCall", "RolloutCall"]


class RolloutCall(BaseModel):
    """One rollout: the component (its runtime decides the pool) and the input."""

    model_config = ConfigDict(extra="forbid")

    component: RolloutFunctionComponent
    input: RolloutInput


class RewardCall(BaseModel):
    """One score: the reward component and the input."""

    model_config = ConfigDict(extra="forbid")

    component: RewardFunctionComponent
    input: RewardInput


class PoolsPage(BaseModel):
    """Every running component pool."""

    pools: list[dict[str, Any]] = Field(default_factory=list)
