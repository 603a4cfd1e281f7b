"""Request bodies of the vLLM OpenAI subset the engine speaks (unknown fields are ignored)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from services.inference.params import GenParams
from shared.schema import Message, ToolInfo

__all__ = [
    "ChatCompletionRequest",
    "CompletionRequest",
    "DetokenizeRequest",
    "StreamOptions",
    "TokenizeRequest",
]


class StreamOptions(BaseModel):
    """``stream_options``: only ``include_usage`` matters here."""

    model_config = ConfigDict(extra="ignore")

    include_usage: bool = False


class _SamplingFields(BaseModel):
    """Sampling fields common to chat and text completions (OpenAI + vLLM extras)."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    n: int = Field(1, ge=1, le=64)
    seed: int | None = None
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    ignore_eos: bool = False
    temperature: float | None = Field(None, ge=0.0, le=10.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    top_k: int | None = Field(None, ge=-1)
    max_tokens: int | None = Field(None, ge=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    return_token_ids: bool = False
    return_tokens_as_token_ids: bool = False

    def stops(self) -> list[str]:
        """Stop strings as a list."""
        if self.stop is None:
            return []
        return [self.stop] if isinstance(self.stop, str) else list(self.stop)

    def gen_params(self, *, max_tokens: int, logprobs: bool, top_logprobs: int) -> GenParams:
        """Engine parameters for this request (OpenAI defaults where unset)."""
        return GenParams(
            temperature=1.0 if self.temperature is None else self.temperature,
            top_p=1.0 if self.top_p is None else self.top_p,
            top_k=-1 if self.top_k in (None, 0) else self.top_k,
            max_tokens=max_tokens, stop=self.stops(), stop_token_ids=self.stop_token_ids or [],
            ignore_eos=self.ignore_eos, n=self.n, seed=self.seed,
            logprobs=logprobs, top_logprobs=top_logprobs,
        )

    @property
    def include_usage(self) -> bool:
        """Whether a streamed response ends with a usage chunk."""
        return bool(self.stream_options and self.stream_options.include_usage)


class ChatCompletionRequest(_SamplingFields):
    """``POST /v1/chat/completions``."""

    messages: list[Message] = Field(min_length=1)
    tools: list[ToolInfo] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool = True
    max_completion_tokens: int | None = Field(None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=20)
    add_generation_prompt: bool = True
    chat_template_kwargs: dict[str, Any] | None = None

    def token_budget(self, default: int) -> int:
        """``max_completion_tokens`` wins over ``max_tokens``; else the server default."""
        return self.max_completion_tokens or self.max_tokens or default

    def tools_enabled(self) -> bool:
        """Tools are offered unless absent or ``tool_choice`` is ``none``."""
        return bool(self.tools) and self.tool_choice != "none"


class CompletionRequest(_SamplingFields):
    """``POST /v1/completions``: one text or token-id prompt, or a list of them."""

    prompt: str | list[int] | list[str] | list[list[int]]
    logprobs: int | None = Field(None, ge=0, le=20)
    prompt_logprobs: int | None = Field(None, ge=0, le=0)
    echo: bool = False

    @field_validator("prompt")
    @classmethod
    def _not_empty(cls, value: Any) -> Any:
        if value == [] or value == "":
            raise ValueError("prompt must not be empty")
        return value

    def prompts(self) -> list[str | list[int]]:
        """The prompt(s) as a list: each a text or a list of token ids."""
        if isinstance(self.prompt, str):
            return [self.prompt]
        if all(isinstance(p, int) for p in self.prompt):
            return [list(self.prompt)]  # type: ignore[arg-type]
        return list(self.prompt)  # type: ignore[arg-type]


class TokenizeRequest(BaseModel):
    """``POST /tokenize``: a text prompt or chat messages (vLLM's two forms)."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    prompt: str | None = None
    messages: list[Message] | None = None
    tools: list[ToolInfo] | None = None
    add_special_tokens: bool = True
    add_generation_prompt: bool = True
    return_token_strs: bool = False


class DetokenizeRequest(BaseModel):
    """``POST /detokenize``."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    tokens: list[int]
    #: Also return each id's own text (``token_texts``), e.g. for a per-token view.
    return_token_texts: bool = False
