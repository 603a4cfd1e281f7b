"""Engine-level generation parameters and outputs (token ids are the source of truth)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.schema import SamplingParams

__all__ = ["CompletionOutput", "FinishReason", "GenParams", "SeqDelta", "TopLogprob"]

FinishReason = Literal["stop", "length", "abort"]


class GenParams(BaseModel):
    """How to sample one request; ``n`` rows share the prompt."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(1.0, ge=0.0, le=10.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    top_k: int = Field(-1, ge=-1)
    max_tokens: int = Field(16, ge=1)
    stop: list[str] = Field(default_factory=list)
    stop_token_ids: list[int] = Field(default_factory=list)
    ignore_eos: bool = False
    n: int = Field(1, ge=1, le=64)
    seed: int | None = None
    logprobs: bool = False
    top_logprobs: int = Field(0, ge=0, le=20)

    @classmethod
    def from_sampling(cls, params: SamplingParams, *, default_max_tokens: int) -> GenParams:
        """Engine params from the shared ``SamplingParams``."""
        return cls(
            temperature=params.temperature,
            top_p=params.top_p,
            top_k=params.top_k,
            max_tokens=params.max_tokens or default_max_tokens,
            stop=list(params.stop or []),
            n=params.n,
            seed=params.seed,
            logprobs=params.logprobs,
            top_logprobs=params.top_logprobs or 0,
        )


class TopLogprob(BaseModel):
    """One alternative token at a sampled position."""

    token_id: int
    logprob: float


class SeqDelta(BaseModel):
    """What one step added to one output row; ``text`` is the whole safe text so far."""

    index: int
    token_ids: list[int]
    logprobs: list[float]
    top_logprobs: list[list[TopLogprob]]
    text: str
    finished: bool = False
    finish_reason: FinishReason | None = None
    stop_reason: str | int | None = None


class CompletionOutput(BaseModel):
    """One finished output row: sampled token ids, aligned logprobs, derived text."""

    index: int
    token_ids: list[int]
    text: str
    logprobs: list[float]
    top_logprobs: list[list[TopLogprob]]
    finish_reason: FinishReason
    stop_reason: str | int | None = None
