"""The small interfaces the rollout engines need from the rest of the suite.

The engines never import the inference engine, the tool manager or the
tool-call parser directly; they talk to these ports. Adapters from the real
components (``InferenceBackend``, ``ToolManager``, ``shared.toolcalls``) are
thin wrappers that satisfy them.

- ``Policy``: one request per trajectory turn. ``chat`` is message mode
  (messages in, text/tool calls out); ``generate`` is token mode (prompt ids
  in, sampled ids + logprobs out). Upstream failures are raised as
  ``shared.errors.UpstreamError`` subclasses.
- ``ToolExecutor``: runs one OpenAI-shaped tool call and returns the
  observation text with a structured status (never only an ``Error:`` prefix).
  An executor backed by an environment may expose ``episode_done``; once it
  is true after a turn's tools ran, the trajectory stops with ``stop``.
- ``ToolCallParser``: raw assistant text -> every attempted call, each with a
  parse status (``ok``, ``invalid_json``, ``unclosed``, ``missing_name``, ...).
- ``ChatTokenizer``: the subset of a Hugging Face tokenizer the token-level
  engine uses to render the chat template and to encode template deltas.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from shared.schema import SamplingParams

__all__ = [
    "BatchPolicy",
    "ChatTokenizer",
    "ParsedCall",
    "Policy",
    "PolicyOutput",
    "ToolCallParser",
    "ToolExecutor",
    "ToolResult",
]


class PolicyOutput(BaseModel):
    """One sampled completion: text, the engine's token ids, their logprobs, why it ended."""

    text: str = ""
    token_ids: list[int] = Field(default_factory=list)
    logprobs: list[float] | None = None
    finish_reason: str = "stop"
    # Message mode only: calls the upstream server already parsed (OpenAI ``tool_calls``).
    tool_calls: list[dict[str, Any]] | None = None
    reasoning_content: str | None = None
    prompt_tokens: int | None = None
    weight_version: str | None = None


class ParsedCall(BaseModel):
    """One attempted tool call found in assistant output, with its parse status."""

    id: str = ""
    name: str = ""
    arguments: Any = None
    raw: str = ""
    status: str = "ok"
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the call parsed cleanly and can be executed."""
        return self.status == "ok"

    def to_openai(self) -> dict[str, Any]:
        """The call as an OpenAI ``tool_calls`` entry (arguments as JSON text)."""
        from shared.schema import dump_arguments

        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": dump_arguments(self.arguments)}}


class ToolResult(BaseModel):
    """What a tool returned: the observation text plus a structured status."""

    content: str = ""
    ok: bool = True
    error_type: str | None = None
    #: The env's reward for this call (env-backed tools only): summed into the turn's ``StepRecord.reward``.
    reward: float | None = None


@runtime_checkable
class Policy(Protocol):
    """A policy served somewhere: one call per trajectory turn."""

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None,
        sampling: SamplingParams,
        extra_body: dict[str, Any] | None = None,
    ) -> PolicyOutput:
        """Message mode: sample one assistant turn for an OpenAI conversation."""
        ...

    async def generate(self, prompt_ids: list[int], *, sampling: SamplingParams) -> PolicyOutput:
        """Token mode: sample one continuation of ``prompt_ids`` (token in, token out)."""
        ...


@runtime_checkable
class BatchPolicy(Protocol):
    """A backend that batches per call (one call, many prompts); see ``MicroBatcher``."""

    async def generate_batch(
        self, prompts: Sequence[list[int]], *, sampling: SamplingParams
    ) -> list[PolicyOutput]:
        """Sample one continuation for each prompt, in order."""
        ...


@runtime_checkable
class ToolExecutor(Protocol):
    """Runs tool calls for one trajectory (one executor per trajectory when stateful)."""

    def tool_infos(self) -> list[dict[str, Any]]:
        """OpenAI function-tool schemas of the tools this executor offers."""
        ...

    async def call(self, tool_call: dict[str, Any]) -> ToolResult:
        """Run one OpenAI-shaped tool call; failures come back as ``ok=False``."""
        ...


ToolCallParser = Callable[[str], list[ParsedCall]]
"""Raw assistant text -> every attempted tool call, each with a parse status."""


@runtime_checkable
class ChatTokenizer(Protocol):
    """The subset of a Hugging Face tokenizer used to render and encode chat templates."""

    eos_token: str | None
    eos_token_id: int | None

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        """Render messages with the model's chat template."""
        ...

    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]:
        """Text -> token ids."""
        ...

    def decode(self, token_ids: Any, skip_special_tokens: bool = ...) -> str:
        """Token ids -> text."""
        ...

