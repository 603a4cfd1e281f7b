"""Request and response bodies of the OPD (on-policy distillation) job API, ``/v1/opd/jobs``.

An OPD job is the reference's ``AgenticRL.run(...)``: a student ``model``, an
optional ``teacher_model``, training and validation datasets, function
components (one rollout processor, any number of weighted reward processors),
``hyper_parameters`` and ``resources``. Everything is checked at submission, so
bad input is a 422 naming the field (``functions[1].name``,
``training_datasets[0].rows[3]``, ``teacher_model``, ...).

``hyper_parameters`` read here: ``rounds`` (or ``n_epochs``), ``group_size``,
``validation_group_size``, ``temperature``, ``top_p``, ``max_tokens``, ``seed``,
``distill_weight`` (or ``opd_teacher_kl_coef``), ``reward_weight`` and
``teacher_system_prompt``. Other keys (a trainer's learning rate, ...) are
recorded with the job and returned by ``GET``: trajforge rolls out, scores and
exports; it does not train. ``resources`` is recorded the same way.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from shared.schema import JobStatus

__all__ = [
    "OpdComponent",
    "OpdDataset",
    "OpdHyperParameters",
    "OpdJobCreate",
    "OpdJobRead",
    "OpdRound",
    "OpdRuntime",
]


class OpdRuntime(BaseModel):
    """A component's runtime spec (the reference's ``FunctionComponentRuntime``)."""

    model_config = ConfigDict(extra="forbid")

    cpu: float = Field(1.0, gt=0, le=64)
    memory_size: int = Field(1024, ge=64, le=262144)
    disk_size: int = Field(512, ge=16, le=1048576)
    concurrency: int = Field(8, ge=1, le=1024)
    capacity: int = Field(1, ge=1, le=1024)
    min_capacity: int = Field(1, ge=0, le=1024)
    max_capacity: int = Field(1, ge=1, le=1024)
    memory_scale_threshold: float = Field(0.8, gt=0, le=1)
    concurrency_scale_threshold: float = Field(0.8, gt=0, le=1)
    env: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _capacities(self) -> OpdRuntime:
        if self.min_capacity > self.max_capacity:
            raise ValueError("min_capacity must not exceed max_capacity")
        if not self.min_capacity <= self.capacity <= self.max_capacity:
            raise ValueError("capacity must lie between min_capacity and max_capacity")
        return self


class OpdComponent(BaseModel):
    """One function component: the rollout processor or a weighted reward processor."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["rollout", "reward"]
    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    classpath: str = Field(min_length=1, max_length=300)
    #: An uploaded function package (``POST /v1/functions``) the classpath lives in.
    function_id: str | None = Field(None, min_length=1, max_length=200)
    weight: float = Field(1.0, ge=0, le=1000)
    timeout: float = Field(120.0, gt=0, le=3600)
    runtime: OpdRuntime = Field(default_factory=lambda: OpdRuntime.model_validate({}))


class OpdDataset(BaseModel):
    """A training or validation set: JSONL rows (each a prompt) and where they came from.

    A row is ``{"messages": [...]}`` (or ``{"prompt": "..."}``) with optional ``id``,
    ``tools``, ``ground_truth`` and ``rollout_extra`` (``solution`` there is the ground truth).
    """

    model_config = ConfigDict(extra="forbid")

    data_source_type: str = Field("inline", max_length=40)
    file_name: str | None = Field(None, max_length=1000)
    rows: list[dict[str, Any]] = Field(min_length=1, max_length=10000)


class OpdHyperParameters(BaseModel):
    """The hyper-parameters an OPD job reads (others are recorded; see the module docstring)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    rounds: int = Field(1, ge=1, le=100, validation_alias=AliasChoices("rounds", "n_epochs"))
    group_size: int = Field(2, ge=1, le=64)
    validation_group_size: int = Field(1, ge=1, le=64)
    temperature: float = Field(1.0, ge=0, le=10)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int = Field(256, ge=1, le=32768)
    seed: int | None = None
    distill_weight: float = Field(1.0, ge=0, le=1000,
                                  validation_alias=AliasChoices("distill_weight", "opd_teacher_kl_coef"))
    reward_weight: float = Field(1.0, ge=0, le=1000)
    teacher_system_prompt: str | None = Field(None, min_length=1, max_length=20000)


class OpdJobCreate(BaseModel):
    """``POST /v1/opd/jobs``: the reference's ``run(...)`` arguments."""

    model_config = ConfigDict(extra="forbid")

    job_name: str = Field(min_length=1, max_length=200)
    model: str = Field(min_length=1, max_length=300)
    teacher_model: str | None = Field(None, min_length=1, max_length=300)
    training_datasets: list[OpdDataset] = Field(min_length=1, max_length=100)
    validation_datasets: list[OpdDataset] = Field(default_factory=list, max_length=100)
    functions: list[OpdComponent] = Field(min_length=1, max_length=32)
    hyper_parameters: OpdHyperParameters = Field(default_factory=lambda: OpdHyperParameters.model_validate({}))
    resources: dict[str, Any] = Field(default_factory=dict)


class OpdRound(BaseModel):
    """One round: its training and validation rollout jobs, status and metrics."""

    round: int
    status: JobStatus
    train_job_id: str | None = None
    validation_job_id: str | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


class OpdJobRead(BaseModel):
    """An OPD job as ``GET /v1/opd/jobs/{id}`` shows it."""

    id: str
    job_name: str
    status: JobStatus
    model: str
    teacher_model: str | None
    rounds_total: int
    rounds: list[OpdRound] = Field(default_factory=list)
    hyper_parameters: dict[str, Any] = Field(default_factory=dict)
    resources: dict[str, Any] = Field(default_factory=dict)
    functions: list[dict[str, Any]] = Field(default_factory=list)
    error: str | None = None
    created_at: datetime
