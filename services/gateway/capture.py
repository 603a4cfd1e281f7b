"""Read the engine's token ids, logprobs and tool calls out of upstream responses.

Handles both vLLM shapes: chat (top-level ``prompt_token_ids``, per-choice
``token_ids``, ``logprobs.content[].logprob``) and completions (per-choice
``prompt_token_ids`` and ``logprobs.token_logprobs``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["CapturedTokens", "extract_tokens", "first_choice", "strip_extensions"]


class CapturedTokens(BaseModel):
    """Token-level facts of choice 0 of one response."""

    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float | None] | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)


def first_choice(response: dict[str, Any]) -> dict[str, Any]:
    """Choice 0 of a response, or an empty dict (some backends send ``choices: null``)."""
    choices = response.get("choices") or []
    return choices[0] if choices and isinstance(choices[0], dict) else {}


def _logprob_values(logprobs: Any) -> list[float | None] | None:
    if not isinstance(logprobs, dict):
        return None
    if isinstance(logprobs.get("content"), list):
        return [item.get("logprob") for item in logprobs["content"] if isinstance(item, dict)]
    if isinstance(logprobs.get("token_logprobs"), list):
        return list(logprobs["token_logprobs"])
    return None


def extract_tokens(response: dict[str, Any]) -> CapturedTokens:
    """Token ids, logprobs, finish reason, usage and tool calls of choice 0."""
    choice = first_choice(response)
    prompt_ids = response.get("prompt_token_ids") or choice.get("prompt_token_ids")
    message = choice.get("message") or {}
    return CapturedTokens(
        prompt_token_ids=prompt_ids,
        completion_token_ids=choice.get("token_ids"),
        logprobs=_logprob_values(choice.get("logprobs")),
        finish_reason=choice.get("finish_reason"),
        usage=response.get("usage"),
        tool_calls=list(message.get("tool_calls") or []),
    )


def strip_extensions(
    response: dict[str, Any], *, keep_token_ids: bool, keep_logprobs: bool
) -> dict[str, Any]:
    """Remove the fields the gateway asked for on its own behalf, in place."""
    if not keep_token_ids:
        response.pop("prompt_token_ids", None)
    for choice in response.get("choices") or []:
        if not isinstance(choice, dict):
            continue
        if not keep_token_ids:
            choice.pop("token_ids", None)
            choice.pop("prompt_token_ids", None)
        if not keep_logprobs and "logprobs" in choice:
            choice["logprobs"] = None
    return response
