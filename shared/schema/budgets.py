"""The one budgets model: what every trajectory may spend (units in the names).

Rollout jobs (``POST /v1/rollouts``, spec files) validate it at submission and
the episode loop runs under the same object, so the defaults a job gets are the
defaults the engine applies: there is no second set.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ParseFailurePolicy", "RolloutLimits"]

ParseFailurePolicy = Literal["observe", "end"]
"""``observe``: feed the parse error back as a tool observation; ``end``: stop the trajectory."""


class RolloutLimits(BaseModel):
    """Per-trajectory budgets; a job whose budgets cannot be met is refused (422 naming the field).

``null`` means no limit for the token, output and time budgets; ``max_turns`` always bounds.
"""

    model_config = ConfigDict(extra="forbid")

    max_turns: int = Field(4, ge=1, le=100)
    max_tokens_per_turn: int | None = Field(256, ge=1, le=32768)
    max_total_tokens: int | None = Field(4096, ge=1, le=1_000_000)
    max_tool_output_chars: int | None = Field(4000, ge=1, le=1_000_000)
    timeout_s: float | None = Field(300.0, gt=0, le=86400)
    tool_timeout_s: float | None = Field(60.0, gt=0, le=3600)
    parse_failure_policy: ParseFailurePolicy = "observe"
    #: Policy calls retried after a transient API failure, and the first backoff between them.
    max_api_retries: int = Field(2, ge=0, le=10)
    retry_backoff_s: float = Field(0.05, ge=0, le=60)

    @model_validator(mode="after")
    def _possible(self) -> RolloutLimits:
        per_turn, total = self.max_tokens_per_turn, self.max_total_tokens
        if per_turn is not None and total is not None and per_turn > total:
            raise ValueError("max_tokens_per_turn cannot exceed max_total_tokens")
        if self.tool_timeout_s is not None and self.timeout_s is not None and self.tool_timeout_s > self.timeout_s:
            raise ValueError("tool_timeout_s cannot exceed the trajectory's timeout_s")
        return self

    @classmethod
    def unbounded(cls, **budgets: Any) -> RolloutLimits:
        """Only ``max_turns`` (and the given budgets) bound: for library callers that pass their own."""
        free = {"max_tokens_per_turn": None, "max_total_tokens": None, "max_tool_output_chars": None,
                "timeout_s": None, "tool_timeout_s": None}
        return cls.model_validate({**free, **budgets})
