"""Request and response bodies of the rollout REST API.

Everything a job needs is checked here, at submission: a task without a user
turn, an unknown tool, env, backend, parser family or reward component, and
budgets that cannot be met are refused with a 422 naming the culprit, so a
job that starts can always finish.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from services.rollout.processors import ProcessorSpec
from shared.schema import Message, SamplingParams, TeacherSpec, ToolInfo
from shared.schema.budgets import RolloutLimits
from shared.schema.functions import RewardFunctionComponent, RolloutFunctionComponent

__all__ = [
    "BUILTIN_TOOLS",
    "ActionSpec",
    "BackendSpec",
    "EnvSpec",
    "JobStatus",
    "PolicySpec",
    "RewardTotal",
    "RewardTotals",
    "RewardsKept",
    "RolloutJobCreate",
    "RolloutJobRead",
    "RolloutRunSpec",
    "RolloutTask",
    "TrajectoryPage",
]

#: Tools of the tools service a job may name.
BUILTIN_TOOLS = ("python", "bash", "calculator", "memory_search")
_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
JobStatus = Literal["pending", "running", "succeeded", "failed", "cancelled"]


class RolloutTask(BaseModel):
    """One prompt to roll out ``group_size`` times."""

    id: str = Field(min_length=1, max_length=300)
    messages: list[Message] = Field(min_length=1)
    tools: list[ToolInfo] | None = None
    ground_truth: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class BackendSpec(BaseModel):
    """An inference backend by registry name, with its connection details."""

    model_config = ConfigDict(extra="forbid")

    name: str = "local"
    base_url: str | None = None
    model: str | None = None


class PolicySpec(BaseModel):
    """The policy: a model name and/or a backend (default: the local engine)."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    backend: BackendSpec | None = None


class ActionSpec(BaseModel):
    """For an OpenEnv server whose actions are not tool calls: the one tool the policy is shown.

    The tool's arguments become the action sent to the server (under ``field`` when given,
    else as the action itself). ``parameters`` defaults to the server's ``/schema`` action schema.
    """

    model_config = ConfigDict(extra="forbid")

    tool_name: str = Field("act", min_length=1, max_length=64, pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*$")
    description: str = Field("Take one action in the environment.", max_length=4000)
    parameters: dict[str, Any] | None = None
    field: str | None = Field(None, min_length=1, max_length=200)


class EnvSpec(BaseModel):
    """An environment: one the envs service hosts, by ``name``, or any OpenEnv server at ``base_url``.

    With ``name`` the env is the envs service's (``TRAJFORGE_ENVS_URL``, or its app in this
    process when that is empty), reached over OpenEnv like any other server.

    With ``base_url`` (``http://host/envs/{name}``, its capability URL, or another OpenEnv
    implementation) each trajectory opens one WebSocket session there, closed when it ends. The
    tools shown are the server's own (``/schema`` ``tools``) or, for a server without tools or when
    ``action`` is given, one tool whose parameters are the server's action schema. ``kwargs`` go
    with every reset (the server builds its env itself).
    """

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, min_length=1)
    base_url: str | None = Field(None, pattern=r"^(https?|wss?)://[^\s/]+(/\S*)?$", max_length=2000)
    kwargs: dict[str, Any] = Field(default_factory=dict)
    action: ActionSpec | None = None
    #: Seconds one step may take on a remote env before its session is discarded (never desynced).
    message_timeout_s: float = Field(60.0, gt=0, le=3600)

    @model_validator(mode="after")
    def _one_source(self) -> EnvSpec:
        if (self.name is None) == (self.base_url is None):
            raise ValueError("give env.name (a built-in env) or env.base_url (an OpenEnv server), exactly one")
        if self.action is not None and self.base_url is None:
            raise ValueError("env.action maps tool calls onto a remote server's actions: give env.base_url")
        return self


class RolloutRunSpec(BaseModel):
    """How every task of a job is rolled out (the job's stored spec; tasks live on its groups)."""

    model_config = ConfigDict(extra="forbid")

    group_size: int = Field(ge=1, le=64)
    oversample: int = Field(0, ge=0, le=64)
    #: Spare members per member started, spent on relaunching a group's stragglers into idle slots
    #: (services/rollout/relaunch.py): 0.125 is at most one spare per 8 members; 0 never relaunches.
    relaunch: float = Field(0.0, ge=0, le=1)
    policy: PolicySpec = Field(default_factory=PolicySpec)
    sampling: SamplingParams = Field(default_factory=lambda: SamplingParams.model_validate({}))
    limits: RolloutLimits = Field(default_factory=lambda: RolloutLimits.model_validate({}))
    tools: list[str] | None = None
    env: EnvSpec | None = None
    reward: dict[str, Any] | None = None
    #: ``grpo``: one advantage per trajectory; ``grpo_per_step``: one per turn from the env's step rewards
    #: (the reward total, if any, added to the last turn), spread on that turn's tokens in the export.
    advantage_estimator: Literal["grpo", "grpo_per_step"] = "grpo"
    mode: Literal["tokens", "messages"] = "tokens"
    tool_parser: str = "auto"
    shard_size: int = Field(4, ge=1, le=1000)
    #: A user rollout processor that runs each member instead of the built-in engine.
    processor: ProcessorSpec | None = None
    #: An uploaded rollout function component (``fcmodel.package_id`` from ``POST /v1/functions``) that
    #: runs each member in the functions service's workers instead of the built-in engine.
    function: RolloutFunctionComponent | None = None
    #: On-policy distillation: a teacher (a gateway model) scores every sampled token of every member.
    teacher: TeacherSpec | None = None
    #: Reward processors (the reference's reward components), added to ``reward`` by weight.
    reward_functions: list[RewardFunctionComponent] | None = Field(None, max_length=32)

    @field_validator("reward_functions")
    @classmethod
    def _reward_functions(cls, comps: list[RewardFunctionComponent] | None) -> list[RewardFunctionComponent] | None:
        if not comps:
            return comps
        names = [c.name for c in comps]
        if len(set(names)) != len(names):
            raise ValueError(f"reward function names must be unique: {names}")
        if sum(c.weight for c in comps) == 0:
            raise ValueError("reward function weights sum to 0: nothing would be scored")
        return comps

    @field_validator("tools")
    @classmethod
    def _tool_names(cls, tools: list[str] | None) -> list[str] | None:
        # Tools are the tools service's (built-ins and registered HTTP tools): names are checked
        # against its listing when a shard starts; here only their form.
        bad = [t for t in tools or [] if not _TOOL_NAME.fullmatch(t)]
        if bad:
            raise ValueError(f"invalid tool names {bad}; built-in tools: {', '.join(BUILTIN_TOOLS)}")
        if tools is not None and len(set(tools)) != len(tools):
            raise ValueError("tool names must be unique")
        return tools

    def _processor_alone(self) -> None:
        if self.tools or self.env is not None:
            raise ValueError("a processor brings its own tools: give processor without tools or env")
        if self.oversample or self.relaunch or self.policy.backend is not None:
            raise ValueError("a processor calls the policy through the gateway: give policy.model at most, "
                             "and no oversample or relaunch")

    @model_validator(mode="after")
    def _one_tool_source(self) -> RolloutRunSpec:
        if self.tools and self.env is not None:
            raise ValueError("give either tools or env, not both")
        if self.processor is not None and self.function is not None:
            raise ValueError("give either processor (in-process) or function (uploaded component), not both")
        if self.processor is not None or self.function is not None:
            self._processor_alone()
        if self.function is not None and not self.function.fcmodel.package_id:
            raise ValueError("function.fcmodel.package_id is required: upload the workspace with POST /v1/functions")
        total = self.limits.max_total_tokens
        if self.sampling.max_tokens is not None and total is not None and self.sampling.max_tokens > total:
            raise ValueError("sampling.max_tokens cannot exceed limits.max_total_tokens")
        if self.sampling.n != 1:
            raise ValueError("sampling.n must be 1: group_size sets the samples per task")
        return self


class RolloutJobCreate(RolloutRunSpec):
    """``POST /v1/rollouts``: what to roll out, against which policy, within which budgets."""

    tasks: list[RolloutTask] = Field(min_length=1, max_length=10000)

    @field_validator("tasks")
    @classmethod
    def _user_turns(cls, tasks: list[RolloutTask]) -> list[RolloutTask]:
        for task in tasks:
            if not any(m.role == "user" for m in task.messages):
                raise ValueError(f"task {task.id!r} has no user turn")
        ids = [t.id for t in tasks]
        if len(set(ids)) != len(ids):
            raise ValueError("task ids must be unique within a job")
        return tasks

    def run_spec(self) -> RolloutRunSpec:
        """Everything but the tasks."""
        return RolloutRunSpec.model_validate(self.model_dump(exclude={"tasks"}))


class RolloutJobRead(BaseModel):
    """A job's state: status, progress and counts per stop reason."""

    id: str
    status: JobStatus
    total_groups: int
    done_groups: int
    counts: dict[str, int] = Field(default_factory=dict)
    progress: float = 0.0
    cancel_requested: bool = False
    error: str | None = None
    created_at: datetime


class TrajectoryPage(BaseModel):
    """A page of a job's trajectories (``Trajectory.to_row()`` plus job keys and reward), and how many it stored."""

    items: list[dict[str, Any]]
    next_offset: int | None = None
    total: int = 0


class RewardTotal(BaseModel):
    """A stored trajectory's newest reward total, as the reward service keeps it."""

    trajectory_id: uuid.UUID
    score: float | None


class RewardTotals(BaseModel):
    """Newest totals for a job's trajectories, from the reward service after it re-scores them."""

    totals: list[RewardTotal] = Field(max_length=10_000)


class RewardsKept(BaseModel):
    """How many of the totals named the job's trajectories (and are now their ``reward``)."""

    kept: int
