"""Sampling parameters shared by the gateway, the engines and rollouts."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

__all__ = ["SamplingParams"]


class SamplingParams(BaseModel):
    """Sampling knobs in OpenAI/vLLM terms; ``n`` is also read as ``num_samples``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    temperature: float = Field(1.0, ge=0.0, le=10.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    top_k: int = Field(-1, ge=-1)
    max_tokens: int | None = Field(None, ge=1)
    stop: list[str] | None = None
    n: int = Field(1, ge=1, le=256, validation_alias=AliasChoices("n", "num_samples"))
    seed: int | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=20)
    repetition_penalty: float | None = Field(None, gt=0.0)

    def to_openai(self) -> dict[str, Any]:
        """Request fields for an OpenAI-compatible chat/completions call."""
        out: dict[str, Any] = {"temperature": self.temperature, "top_p": self.top_p, "n": self.n}
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        if self.stop:
            out["stop"] = self.stop
        if self.seed is not None:
            out["seed"] = self.seed
        if self.logprobs:
            out["logprobs"] = True
            if self.top_logprobs is not None:
                out["top_logprobs"] = self.top_logprobs
        extra: dict[str, Any] = {}
        if self.top_k != -1:
            extra["top_k"] = self.top_k
        if self.repetition_penalty is not None:
            extra["repetition_penalty"] = self.repetition_penalty
        out.update(extra)
        return out
