"""Explicit rollout budgets and per-job policies (one model, validated at submission)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ParseFailurePolicy", "RolloutLimits"]

ParseFailurePolicy = Literal["observe", "end"]
"""``observe``: feed the parse error back as a tool observation; ``end``: stop the trajectory."""


class RolloutLimits(BaseModel):
    """Budgets every trajectory runs under; units are in the names."""

    model_config = ConfigDict(extra="forbid")

    max_turns: int = Field(default=6, ge=1, le=1000)
    max_tokens_per_turn: int | None = Field(default=None, ge=1)
    max_total_tokens: int | None = Field(default=None, ge=1)
    max_tool_output_chars: int | None = Field(default=None, ge=1)
    timeout_s: float | None = Field(default=None, gt=0)
    tool_timeout_s: float | None = Field(default=None, gt=0)
    parse_failure_policy: ParseFailurePolicy = "observe"
    max_api_retries: int = Field(default=2, ge=0, le=10)
    retry_backoff_s: float = Field(default=0.05, ge=0)

    @model_validator(mode="after")
    def _possible(self) -> RolloutLimits:
        if (self.max_total_tokens is not None and self.max_tokens_per_turn is not None
                and self.max_tokens_per_turn > self.max_total_tokens):
            raise ValueError("max_tokens_per_turn cannot exceed max_total_tokens")
        return self
