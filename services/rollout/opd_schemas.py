"""Request and response bodies of the OPD (on-policy distillation) job API, ``/v1/opd/jobs``.

An OPD job is the reference's ``AgenticRL.run(...)``: a student ``model``, an
optional ``teacher_model``, training and validation datasets, function
components (``shared.schema.functions``: one rollout processor, any number of
weighted reward processors, each tagged ``type: rollout`` / ``type: reward``),
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
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from shared.schema import JobStatus
from shared.schema.functions import RewardFunctionComponent, RolloutFunctionComponent

__all__ = [
    "OpdDataset",
    "OpdFunction",
    "OpdHyperParameters",
    "OpdJobCreate",
    "OpdJobRead",
    "OpdRewardFunction",
    "OpdRolloutFunction",
    "OpdRound",
]


class OpdRolloutFunction(RolloutFunctionComponent):
    """The rollout component on the wire (``type: rollout``)."""

    type: Literal["rollout"]


class OpdRewardFunction(RewardFunctionComponent):
    """A reward component on the wire (``type: reward``), combined with the others by ``weight``."""

    type: Literal["reward"]


OpdFunction = Annotated[OpdRolloutFunction | OpdRewardFunction, Field(discriminator="type")]


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
    functions: list[OpdFunction] = Field(min_length=1, max_length=32)
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
