"""Assemble streamed chat/completion chunks into the full response for the trace."""

from __future__ import annotations

from typing import Any

__all__ = ["StreamAssembler"]


class _ChoiceState:
    """Accumulated deltas of one choice."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.text: list[str] = []
        self.tool_calls: dict[int, dict[str, Any]] = {}
        self.token_ids: list[int] = []
        self.logprobs: list[dict[str, Any]] = []
        self.token_logprobs: list[float | None] = []
        self.finish_reason: str | None = None
        self.role = "assistant"

    def feed(self, choice: dict[str, Any]) -> None:
        """Fold one chunk's choice into this state."""
        delta = choice.get("delta") or {}
        self.role = delta.get("role") or self.role
        self.content.append(delta.get("content") or "")
        self.reasoning.append(delta.get("reasoning") or delta.get("reasoning_content") or "")
        self.text.append(choice.get("text") or "")
        for call in delta.get("tool_calls") or []:
            self._feed_call(call)
        self.token_ids.extend(choice.get("token_ids") or [])
        self._feed_logprobs(choice.get("logprobs"))
        self.finish_reason = choice.get("finish_reason") or self.finish_reason

    def _feed_call(self, call: dict[str, Any]) -> None:
        # Only the first fragment of a call carries id/name; arguments arrive in pieces.
        slot = self.tool_calls.setdefault(
            int(call.get("index", 0)),
            {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
        )
        slot["id"] = call.get("id") or slot["id"]
        fn = call.get("function") or {}
        slot["function"]["name"] += fn.get("name") or ""
        slot["function"]["arguments"] += fn.get("arguments") or ""

    def _feed_logprobs(self, logprobs: Any) -> None:
        if not isinstance(logprobs, dict):
            return
        self.logprobs.extend(logprobs.get("content") or [])
        self.token_logprobs.extend(logprobs.get("token_logprobs") or [])

    def build(self, index: int, *, chat: bool) -> dict[str, Any]:
        """The choice in the non-streaming shape."""
        out: dict[str, Any] = {"index": index, "finish_reason": self.finish_reason}
        if chat:
            message: dict[str, Any] = {"role": self.role, "content": "".join(self.content) or None}
            if any(self.reasoning):
                message["reasoning"] = "".join(self.reasoning)
            if self.tool_calls:
                message["tool_calls"] = [self.tool_calls[i] for i in sorted(self.tool_calls)]
            out["message"] = message
            out["logprobs"] = {"content": self.logprobs} if self.logprobs else None
        else:
            out["text"] = "".join(self.text)
            out["logprobs"] = {"token_logprobs": self.token_logprobs} if self.token_logprobs else None
        if self.token_ids:
            out["token_ids"] = self.token_ids
        return out


class StreamAssembler:
    """Feed decoded SSE chunks in order; ``build()`` gives the non-streaming shape."""

    def __init__(self, *, chat: bool) -> None:
        self.chat = chat
        self.head: dict[str, Any] = {}
        self.choices: dict[int, _ChoiceState] = {}
        self.prompt_token_ids: list[int] | None = None
        self.usage: dict[str, Any] | None = None
        self.chunks = 0

    def feed(self, chunk: dict[str, Any]) -> None:
        """Fold one chunk into the running response."""
        self.chunks += 1
        if not self.head:
            self.head = {k: chunk.get(k) for k in ("id", "created", "model")}
        self.prompt_token_ids = self.prompt_token_ids or chunk.get("prompt_token_ids")
        self.usage = chunk.get("usage") or self.usage
        for choice in chunk.get("choices") or []:
            if self.prompt_token_ids is None and choice.get("prompt_token_ids"):
                self.prompt_token_ids = choice["prompt_token_ids"]
            self.choices.setdefault(int(choice.get("index", 0)), _ChoiceState()).feed(choice)

    def build(self) -> dict[str, Any]:
        """The full response as a non-streaming call would have returned it."""
        kind = "chat.completion" if self.chat else "text_completion"
        out: dict[str, Any] = {**self.head, "object": kind}
        out["choices"] = [self.choices[i].build(i, chat=self.chat) for i in sorted(self.choices)]
        if self.prompt_token_ids is not None:
            out["prompt_token_ids"] = self.prompt_token_ids
        out["usage"] = self.usage
        return out
