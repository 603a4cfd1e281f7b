"""The one trajectory schema: cleaning rows, rollouts and gateway sessions all use it.

A cleaning row is a ``Trajectory`` without the rollout fields. Token data is
the engine's own (token in, token out): ``prompt_ids`` + ``response_ids`` with
``loss_mask`` 1 on sampled tokens and 0 on template/tool tokens, ``logprobs``
aligned to ``response_ids`` (``None`` on non-sampled slots). ``teacher_logprobs``
(on-policy distillation) are a teacher's logprobs of the same tokens, aligned the
same way.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.schema.messages import Message, ToolInfo

__all__ = [
    "STOP_REASONS",
    "RewardRecord",
    "ScoredTrajectory",
    "StepRecord",
    "StopReason",
    "TokenData",
    "Trajectory",
]

StopReason = Literal[
    "stop",
    "length",
    "max_turns",
    "max_total_tokens",
    "tool_error",
    "api_error",
    "timeout",
    "cancelled",
]
STOP_REASONS: tuple[str, ...] = StopReason.__args__  # type: ignore[attr-defined]
_TOKEN_KEYS = ("input_ids", "labels", "logprobs", "prompt_ids", "response_ids", "loss_mask")


class RewardRecord(BaseModel):
    """A score with its provenance, so stored trajectories can be re-scored."""

    component: str
    version: str = "1"
    params: dict[str, Any] = Field(default_factory=dict)
    score: float | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    weight: float = 1.0
    status: Literal["ok", "failed", "skipped"] = "ok"
    error: str | None = None



class ScoredTrajectory(BaseModel):
    """One trajectory's reward: total, flat metrics, provenance records, status."""

    trajectory_id: str
    score: float | None
    metrics: dict[str, float] = Field(default_factory=dict)
    records: list[RewardRecord] = Field(default_factory=list)
    status: Literal["ok", "failed", "skipped"] = "ok"
    mask: bool = False
    error: str | None = None


class StepRecord(BaseModel):
    """One turn of a rollout: what the policy produced and what the tools returned."""

    model_config = ConfigDict(extra="allow")

    turn: int
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    parse_statuses: list[str] = Field(default_factory=list)
    observations: list[str] = Field(default_factory=list)
    reward: float | None = None
    latency_s: float | None = None
    error: str | None = None


class TokenData(BaseModel):
    """Token-level view of a trajectory (ids are the engine's, never re-tokenised)."""

    prompt_ids: list[int] = Field(default_factory=list)
    response_ids: list[int] = Field(default_factory=list)
    loss_mask: list[int] = Field(default_factory=list)
    logprobs: list[float | None] = Field(default_factory=list)
    weight_version: str | None = None
    #: A teacher's logprob of each response token (``None`` where the policy did not sample it).
    teacher_logprobs: list[float | None] = Field(default_factory=list)

    @model_validator(mode="after")
    def _aligned(self) -> TokenData:
        n = len(self.response_ids)
        for name in ("loss_mask", "logprobs", "teacher_logprobs"):
            values = getattr(self, name)
            if values and len(values) != n:
                raise ValueError(f"{name} has {len(values)} entries for {n} response ids")
        return self

    @property
    def input_ids(self) -> list[int]:
        return self.prompt_ids + self.response_ids

    @property
    def labels(self) -> list[int]:
        """``input_ids`` with -100 on every token that was not sampled by the policy."""
        masked = [tok if m else -100 for tok, m in zip(self.response_ids, self.loss_mask, strict=True)]
        return [-100] * len(self.prompt_ids) + masked


class Trajectory(BaseModel):
    """A multi-turn conversation plus, for rollouts, its token data, steps and rewards."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    group_id: str | None = None
    sample_index: int = 0
    messages: list[Message]
    tools: list[ToolInfo] = Field(default_factory=list)
    turns: int = 0
    stop_reason: StopReason | None = None
    truncated: bool = False
    tokens: TokenData | None = None
    steps: list[StepRecord] = Field(default_factory=list)
    rewards: list[RewardRecord] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _coerce_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("id") is not None and not isinstance(data["id"], str):
            data = {**data, "id": str(data["id"])}
        if isinstance(data, dict) and isinstance(data.get("tools"), str):
            import json

            data = {**data, "tools": json.loads(data["tools"]) if data["tools"].strip() else []}
        return data

    @property
    def reward(self) -> float | None:
        """Weighted sum of the ok reward components, or ``None`` if nothing was scored."""
        scored = [r for r in self.rewards if r.status == "ok" and r.score is not None]
        if not scored:
            return None
        return sum(r.score * r.weight for r in scored if r.score is not None)

    # Read access by key, as the seed rollouts' dict results are read (``r['turns']``,
    # ``r['messages']``, ``r['input_ids']``, ``r['labels']``, ``r['logprobs']``).
    def __getitem__(self, key: str) -> Any:
        if key in _TOKEN_KEYS:
            if self.tokens is None:
                raise KeyError(f"{key!r}: this trajectory has no token data (a message-level rollout)")
            return getattr(self.tokens, key)
        if key == "reward":
            return self.reward
        if key in type(self).model_fields or key in (self.model_extra or {}):
            return getattr(self, key)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        """``self[key]``, or ``default`` when absent or null."""
        try:
            value = self[key]
        except KeyError:
            return default
        return default if value is None else value

    def to_row(self) -> dict[str, Any]:
        """Canonical JSON-ready dict: messages in OpenAI shape, unset fields omitted."""
        # Only top-level unset fields are omitted: None inside user data (arguments, ground truth) is data.
        dumped = self.model_dump(mode="json", exclude={"messages", "tools"})
        declared = type(self).model_fields
        out = {k: v for k, v in dumped.items() if v is not None or k not in declared}
        out["messages"] = [m.to_openai() for m in self.messages]
        out["tools"] = [t.model_dump(mode="json") for t in self.tools]
        return out
