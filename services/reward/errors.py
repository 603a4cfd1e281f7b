"""Reward-service errors, derived from the shared error tree."""

from __future__ import annotations

from shared.errors import RewardError
from shared.schema.reward_spec import RewardSpecError

__all__ = ["ProcessorFailed", "ProcessorTimeout", "RewardSpecError", "UnknownComponent"]


class UnknownComponent(RewardSpecError):
    """A reward spec names a component that is not registered."""

    code = "unknown_reward_component"


class ProcessorFailed(RewardError):
    """A reward processor raised while scoring one trajectory."""

    code = "reward_processor_failed"


class ProcessorTimeout(RewardError):
    """A reward processor did not finish within its timeout."""

    code = "reward_processor_timeout"
