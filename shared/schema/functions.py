"""Function components: the contracts of user rollout and reward processors, and how they run.

A user workspace is a ``functions/`` package plus ``requirements.txt``; each
component names one class in it by ``classpath`` and the runtime its worker
instances get. The shapes follow the Agentic OPD reference field for field:

    RolloutInput(model_resource=ModelResource(...), sampling_params, messages, rollout_extra)
      -> RolloutOutput(agent_output=AgentOutput(messages, rollout_extra, rollout_metrics,
                                                reward_score), status, error)
    RewardInput(ground_truth, agent_output)
      -> RewardOutput(reward=Reward(reward_score, reward_metrics), status, error)

``RolloutInput`` is also an ``AgentTask`` (``id``, ``tools``, ``ground_truth``,
``metadata``: the task's data) and carries the job's ``limits``. A failed
rollout is data: its last assistant message starts with ``ROLLOUT_ERROR:``
and its status is ``FAILED``.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from shared.plugins import CLASSPATH_PATTERN
from shared.schema.env import AgentTask
from shared.schema.trajectory import Trajectory

__all__ = [
    "COMPONENT_NAME_PATTERN",
    "PACKAGE_ID_PATTERN",
    "ROLLOUT_ERROR_PREFIX",
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

#: What the response of a failed rollout starts with (the reference's fallback convention).
ROLLOUT_ERROR_PREFIX = "ROLLOUT_ERROR:"
#: A component name: what jobs and metrics call it.
COMPONENT_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
#: An uploaded package: ``pkg-`` and the first 24 hex digits of the zip's sha256.
PACKAGE_ID_PATTERN = r"^pkg-[0-9a-f]{24}$"


class TaskStatus(StrEnum):
    """How a processor call ended."""

    SUCCESS = "SUCCESS"
    FAILED = "FAILED"

    @classmethod
    def _missing_(cls, value: object) -> TaskStatus | None:
        # Older processors said ok/error (and any case): read them as the two states.
        text = str(value).strip().upper()
        if text in ("OK", "SUCCEEDED", "COMPLETED"):
            return cls.SUCCESS
        if text in ("ERROR", "FAIL", "FAILURE"):
            return cls.FAILED
        return None


class ModelResource(BaseModel):
    """Where the policy is: model name, OpenAI-compatible base URL, and the key to send there."""

    model_name: str = ""
    base_url: str = ""
    # Kept out of reprs so it never lands in logs; it does travel to the worker that needs it.
    api_key: str = Field(default="", repr=False)


class RolloutInput(AgentTask):
    """One task handed to a rollout processor.

    ``sampling_params`` is the job's sampling as OpenAI request fields (``temperature``,
    ``max_tokens``, ...) plus ``timeout`` (seconds for the whole member); ``rollout_extra`` is
    the task's extra data, passed through to the output and readable by reward processors;
    ``limits`` is the job's ``RolloutLimits``.
    """

    model_resource: ModelResource = Field(default_factory=ModelResource)
    sampling_params: dict[str, Any] = Field(default_factory=dict)
    rollout_extra: dict[str, Any] = Field(default_factory=dict)
    limits: dict[str, Any] = Field(default_factory=dict)
    _http_client: Any = PrivateAttr(default=None)

    @property
    def http_client(self) -> Any:
        """An ``httpx.AsyncClient`` to hand to the OpenAI client, or None to let it open its own.

        Set only when the processor runs in the gateway's own process (reached in memory).
        """
        return self._http_client

    def with_http_client(self, client: Any) -> RolloutInput:
        """This input, carrying ``client`` for in-memory calls to ``model_resource.base_url``."""
        self._http_client = client
        return self


class AgentOutput(BaseModel):
    """What the agent did: the whole conversation, the extra data passed on, its metrics."""

    messages: list[dict[str, Any]] = Field(default_factory=list)
    rollout_extra: dict[str, Any] | None = None
    rollout_metrics: dict[str, float] = Field(default_factory=dict)
    reward_score: float = 0.0

    @property
    def response(self) -> str:
        """The last message's text (the final answer, or the ``ROLLOUT_ERROR:`` fallback)."""
        last = self.messages[-1] if self.messages else {}
        return str(last.get("content") or "")

    @property
    def is_rollout_error(self) -> bool:
        """True when the last message is the failed-rollout fallback."""
        return self.response.startswith(ROLLOUT_ERROR_PREFIX)


class RolloutOutput(BaseModel):
    """What a rollout processor returns: the agent's output, SUCCESS or FAILED, and why it failed."""

    agent_output: AgentOutput = Field(default_factory=AgentOutput)
    status: TaskStatus = TaskStatus.SUCCESS
    error: str | None = None

    @property
    def failed(self) -> bool:
        """True when the processor reported FAILED or returned the ``ROLLOUT_ERROR:`` fallback."""
        return self.status is TaskStatus.FAILED or self.agent_output.is_rollout_error


def rollout_error_output(inp: RolloutInput, cause: str, *, metrics: dict[str, float] | None = None) -> RolloutOutput:
    """The fallback for a rollout that did not complete: the input's messages, then ``ROLLOUT_ERROR: cause``."""
    reply = {"role": "assistant", "content": f"{ROLLOUT_ERROR_PREFIX} {cause}"}
    agent = AgentOutput(messages=[*inp.messages, reply], rollout_extra=inp.rollout_extra,
                        rollout_metrics=dict(metrics or {}))
    return RolloutOutput(agent_output=agent, status=TaskStatus.FAILED, error=cause)


class Reward(BaseModel):
    """A score and the named metrics behind it (metrics are reported, not summed)."""

    reward_score: float = 0.0
    reward_metrics: dict[str, float] = Field(default_factory=dict)


class RewardInput(BaseModel):
    """One rollout to score: its ground truth and the agent's output.

    ``trajectory`` is trajforge's stored trajectory of the same rollout (token ids, turns), for
    processors that need more than the messages; None when scoring a bare agent output.
    """

    ground_truth: Any = None
    agent_output: AgentOutput = Field(default_factory=AgentOutput)
    trajectory: Trajectory | None = None

    @model_validator(mode="after")
    def _output_of_trajectory(self) -> RewardInput:
        # Scoring a stored trajectory: its messages and metadata are the agent output processors read.
        if self.trajectory is not None and not self.agent_output.messages:
            traj = self.trajectory
            self.agent_output = AgentOutput(messages=[m.to_openai() for m in traj.messages],
                                            rollout_extra=dict(traj.metadata),
                                            rollout_metrics=dict(traj.metadata.get("rollout_metrics") or {}))
        return self

    def truth(self) -> Any:
        """The ground truth: the input's, else ``agent_output.rollout_extra['solution']`` (the reference's rule)."""
        if self.ground_truth is not None:
            return self.ground_truth
        return (self.agent_output.rollout_extra or {}).get("solution")


class RewardOutput(BaseModel):
    """A reward processor's verdict: the reward, SUCCESS or FAILED, and why it failed."""

    reward: Reward = Field(default_factory=Reward)
    status: TaskStatus = TaskStatus.SUCCESS
    error: str | None = None

    @model_validator(mode="after")
    def _finite(self) -> RewardOutput:
        # A NaN or infinite score would poison every advantage of its group: report it as a failure.
        if self.status is TaskStatus.SUCCESS and not math.isfinite(self.reward.reward_score):
            self.error = f"reward_score is {self.reward.reward_score}, not a finite number"
            self.status = TaskStatus.FAILED
        return self


class FunctionComponentRuntime(BaseModel):
    """The resources and scaling of one component's worker instances.

    Each instance gets ``cpu`` cores, ``memory_size`` MB of memory and ``disk_size`` MB of
    scratch disk, and serves up to ``concurrency`` calls at once. ``capacity`` instances start;
    the pool scales between ``min_capacity`` and ``max_capacity``, up when in-flight calls
    exceed ``concurrency_scale_threshold`` of the pool's slots or an instance's memory exceeds
    ``memory_scale_threshold`` of its limit, down when idle. ``env`` is added to each
    instance's environment.
    """

    model_config = ConfigDict(extra="forbid")

    cpu: float = Field(default=1.0, gt=0, le=64)
    memory_size: int = Field(default=1024, ge=32, le=262_144, description="MB")
    disk_size: int = Field(default=512, ge=1, le=1_048_576, description="MB")
    concurrency: int = Field(default=1, ge=1, le=1024)
    min_capacity: int = Field(default=1, ge=1, le=256)
    capacity: int = Field(default=1, ge=1, le=256)
    max_capacity: int = Field(default=1, ge=1, le=256)
    memory_scale_threshold: float = Field(default=0.8, gt=0, le=1)
    concurrency_scale_threshold: float = Field(default=0.8, gt=0, le=1)
    env: dict[str, str] = Field(default_factory=dict)

    # Declared in check order (min, then capacity, then max) so each validator sees the fields
    # before it and a bad range is reported on the field that breaks it.
    @field_validator("capacity")
    @classmethod
    def _capacity_in_range(cls, value: int, info: ValidationInfo) -> int:
        low = info.data.get("min_capacity")
        if low is not None and value < low:
            raise ValueError(f"capacity ({value}) must be at least min_capacity ({low})")
        return value

    @field_validator("max_capacity")
    @classmethod
    def _max_in_range(cls, value: int, info: ValidationInfo) -> int:
        for name in ("capacity", "min_capacity"):
            low = info.data.get(name)
            if low is not None and value < low:
                raise ValueError(f"max_capacity ({value}) must be at least {name} ({low})")
        return value

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not name or "=" in name or "\0" in name or "\0" in value[name]:
                raise ValueError(f"env name {name!r} is not a valid environment variable")
        return value


class FunctionComponentModel(BaseModel):
    """Where a component's code is: the workspace and the processor class in it.

    ``zipdir`` is the local workspace directory (``functions/`` + ``requirements.txt``) that the
    client zips and uploads; ``package_id`` is what the upload returned. The server needs
    ``package_id``; the client fills it in from ``zipdir`` when only that is given.
    """

    model_config = ConfigDict(extra="forbid")

    zipdir: str | None = None
    package_id: str | None = Field(default=None, pattern=PACKAGE_ID_PATTERN)
    classpath: str = Field(pattern=CLASSPATH_PATTERN, max_length=300)


class RolloutFunctionComponent(BaseModel):
    """A rollout processor component: its name, per-call ``timeout`` (seconds), code and runtime."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=COMPONENT_NAME_PATTERN)
    timeout: float = Field(default=120.0, gt=0, le=86_400)
    fcmodel: FunctionComponentModel
    runtime: FunctionComponentRuntime = Field(default_factory=FunctionComponentRuntime)


class RewardFunctionComponent(RolloutFunctionComponent):
    """A reward processor component; several are combined by ``weight`` (0 = reported only)."""

    weight: float = Field(default=1.0, allow_inf_nan=False)
