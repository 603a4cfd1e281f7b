"""Job status models shared by the cleaning, rollout and reward services."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["JobProgress", "JobStatus", "Page", "TeacherSpec"]

JobStatus = Literal["pending", "running", "succeeded", "failed", "cancelled"]


class JobProgress(BaseModel):
    """Progress of a long-running job."""

    id: str
    kind: str
    status: JobStatus
    total: int = 0
    done: int = 0
    failed: int = 0
    counts: dict[str, int] = Field(default_factory=dict)
    error: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


class Page(BaseModel):
    """A page of results with an opaque cursor for the next one."""

    items: list[Any]
    next_cursor: str | None = None
    total: int | None = None


class TeacherSpec(BaseModel):
    """A rollout job's teacher: a model the gateway serves, scoring every sampled student token.

    The teacher sees the student's own prompt and response token ids (token in, never
    re-tokenised), or, with ``system_prompt``, the same conversation under that system
    message (its prompt rendered by the teacher's chat template; the response ids stay the
    student's). Teacher and student must share a tokenizer. ``distill_weight`` and
    ``reward_weight`` weigh the per-token distillation advantage against the reward
    advantage in the export's ``advantages`` column.
    """

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, max_length=300)
    system_prompt: str | None = Field(None, min_length=1, max_length=20000)
    distill_weight: float = Field(1.0, ge=0.0, le=1000.0)
    reward_weight: float = Field(1.0, ge=0.0, le=1000.0)
    #: Seconds one scoring call may take before the trajectory is stored without teacher logprobs.
    timeout_s: float = Field(300.0, gt=0, le=3600)
