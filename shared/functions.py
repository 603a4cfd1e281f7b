"""What user function code imports: the processor bases and the contracts they speak.

    from shared.functions import AbstractRolloutProcessor, AgentOutput, RolloutInput, RolloutOutput, TaskStatus

    class MyRolloutProcessor(AbstractRolloutProcessor):
        async def process(self, input: RolloutInput) -> RolloutOutput:
            ...

A worker instance builds the class once (no arguments), calls ``setup()`` once, then awaits
``process`` for each call, up to the runtime's ``concurrency`` at a time on one event loop, so
``process`` must not block (use async clients, or ``asyncio.to_thread`` for blocking work).
"""

from __future__ import annotations

import abc

from shared.schema.functions import (
    ROLLOUT_ERROR_PREFIX,
    AgentOutput,
    FunctionComponentModel,
    FunctionComponentRuntime,
    ModelResource,
    Reward,
    RewardFunctionComponent,
    RewardInput,
    RewardOutput,
    RolloutFunctionComponent,
    RolloutInput,
    RolloutOutput,
    TaskStatus,
    rollout_error_output,
)

__all__ = [
    "ROLLOUT_ERROR_PREFIX",
    "AbstractRewardProcessor",
    "AbstractRolloutProcessor",
    "AgentOutput",
    "FunctionComponentModel",
    "FunctionComponentRuntime",
    "ModelResource",
    "Reward",
    "RewardFunctionComponent",
    "RewardInput",
    "RewardOutput",
    "RolloutFunctionComponent",
    "RolloutInput",
    "RolloutOutput",
    "TaskStatus",
    "rollout_error_output",
]


class AbstractRolloutProcessor(abc.ABC):
    """Base of a rollout processor: override ``process``; override ``setup`` to warm up once."""

    def setup(self) -> None:  # noqa: B027 - an optional hook; the default is to do nothing
        """Called once per instance before the first ``process`` (load files, build clients)."""

    @abc.abstractmethod
    async def process(self, input: RolloutInput) -> RolloutOutput:  # noqa: A002 - the reference's name
        """Run one task against ``input.model_resource`` and return the conversation."""


class AbstractRewardProcessor(abc.ABC):
    """Base of a reward processor: override ``process``; override ``setup`` to warm up once."""

    def setup(self) -> None:  # noqa: B027 - an optional hook; the default is to do nothing
        """Called once per instance before the first ``process``."""

    @abc.abstractmethod
    async def process(self, input: RewardInput) -> RewardOutput:  # noqa: A002 - the reference's name
        """Score one agent output against ``input.ground_truth``."""
