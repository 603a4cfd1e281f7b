"""OpenAI-shaped response pieces: logprobs blocks, usage, choices (vLLM extras included)."""

from __future__ import annotations

from typing import Any, Protocol

from services.inference.params import CompletionOutput, TopLogprob

__all__ = ["Sampled", "TokenText", "chat_logprobs", "completion_logprobs", "finish_reason", "usage"]


class Sampled(Protocol):
    """Anything carrying sampled ids with aligned logprobs (an output or a stream delta)."""

    token_ids: list[int]
    logprobs: list[float]
    top_logprobs: list[list[TopLogprob]]


class TokenText:
    """Token id → the text OpenAI clients expect in logprobs (or ``token_id:N``)."""

    def __init__(self, tokenizer: Any, *, as_ids: bool = False) -> None:
        self._tokenizer, self._as_ids = tokenizer, as_ids

    def __call__(self, token_id: int) -> str:
        """Text of one token."""
        if self._as_ids:
            return f"token_id:{token_id}"
        return str(self._tokenizer.decode([token_id]))


def _entry(text_of: TokenText, token_id: int, logprob: float) -> dict[str, Any]:
    text = text_of(token_id)
    return {"token": text, "logprob": logprob, "bytes": list(text.encode("utf-8"))}


def chat_logprobs(out: Sampled, text_of: TokenText, *, start: int = 0,
                  end: int | None = None) -> dict[str, Any]:
    """Chat ``logprobs`` block ``{"content": [...]}`` for sampled tokens ``start:end``."""
    content = []
    ids, lps, tops = out.token_ids[start:end], out.logprobs[start:end], out.top_logprobs[start:end]
    for token_id, logprob, top in zip(ids, lps, tops, strict=True):
        entry = _entry(text_of, token_id, logprob)
        entry["top_logprobs"] = [_entry(text_of, t.token_id, t.logprob) for t in top]
        content.append(entry)
    return {"content": content}


def _top_map(text_of: TokenText, top: list[TopLogprob]) -> dict[str, float]:
    return {text_of(t.token_id): t.logprob for t in top}


def completion_logprobs(out: Sampled, text_of: TokenText, *, start: int = 0,
                        end: int | None = None, offset: int = 0) -> dict[str, Any]:
    """Legacy completions ``logprobs`` block (tokens, token_logprobs, top_logprobs, text_offset)."""
    tokens = [text_of(t) for t in out.token_ids[start:end]]
    offsets, position = [], offset
    for token in tokens:
        offsets.append(position)
        position += len(token)
    return {
        "tokens": tokens,
        "token_logprobs": out.logprobs[start:end],
        "top_logprobs": [_top_map(text_of, top) for top in out.top_logprobs[start:end]],
        "text_offset": offsets,
    }


def finish_reason(out: CompletionOutput, *, has_tool_calls: bool = False) -> str:
    """OpenAI finish_reason: ``tool_calls`` when calls were parsed, abort reported as stop."""
    if has_tool_calls and out.finish_reason == "stop":
        return "tool_calls"
    return "length" if out.finish_reason == "length" else "stop"


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    """The ``usage`` object."""
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}
