"""Server-sent events for chat and text completions, tool-call deltas included.

With tools offered, text after an opening ``<tool_call>`` is held back; when the
row finishes, the full text goes through the shared parser and each call is sent
as OpenAI streams them: a first fragment with id, type and name, then arguments.
A failure after the 200 status becomes a ``data: {"error": ...}`` event.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from services.inference.engine import Engine
from services.inference.errors import GenerationAborted
from services.inference.params import GenParams, SeqDelta
from services.inference.protocol import ChatCompletionRequest, CompletionRequest
from services.inference.responses import TokenText, chat_logprobs, completion_logprobs, usage
from services.inference.service import new_id
from services.inference.toolparse import TOOL_CALL_OPEN, extract_tool_calls
from shared.errors import TrajforgeError
from shared.web.openai_errors import openai_error_body

__all__ = ["chat_events", "completion_events", "sse"]


def sse(payload: dict[str, Any] | str) -> str:
    """One SSE event line pair."""
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return f"data: {data}\n\n"


def _error_event(exc: Exception) -> str:
    if isinstance(exc, TrajforgeError):
        body = openai_error_body(exc.message, status=exc.status_code, code=exc.code, param=exc.param)
    else:
        body = openai_error_body("The engine failed while generating.", status=500, code="internal_error")
    return sse(body.model_dump())


def _visible(text: str, tools_on: bool) -> str:
    """Text that may be streamed as content (tool-call markup held back)."""
    if not tools_on:
        return text
    cut = text.find(TOOL_CALL_OPEN)
    if cut >= 0:
        return text[:cut]
    for size in range(min(len(TOOL_CALL_OPEN) - 1, len(text)), 0, -1):
        if text.endswith(TOOL_CALL_OPEN[:size]):
            return text[:-size]
    return text


def _raise_if_aborted(delta: SeqDelta) -> None:
    if delta.finish_reason == "abort":
        raise GenerationAborted("The engine aborted this request (model failure or shutdown); retry it.")


class _ChatStream:
    """Per-request state of a streamed chat completion."""

    def __init__(self, engine: Engine, req: ChatCompletionRequest, prompt_ids: list[int]) -> None:
        self.req, self.prompt_ids = req, prompt_ids
        self.head = {"id": new_id("chatcmpl"), "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": engine.name}
        self.text_of = TokenText(engine.tokenizer, as_ids=req.return_tokens_as_token_ids)
        self.sent = [0] * req.n
        self.produced = 0
        self.tools_on = req.tools_enabled()

    def chunk(self, index: int, delta: dict[str, Any], *, finish: str | None = None,
              extra: dict[str, Any] | None = None) -> str:
        """One chunk for choice ``index``."""
        choice: dict[str, Any] = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
        choice.update(extra or {})
        return sse({**self.head, "choices": [choice]})

    def opening(self) -> list[str]:
        """First chunk of every choice: the assistant role (and the prompt ids once)."""
        events = []
        for i in range(self.req.n):
            choice = {"index": i, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                      "finish_reason": None}
            # vLLM sends prompt_token_ids once, on the first chunk.
            first = {"prompt_token_ids": self.prompt_ids} if self.req.return_token_ids and i == 0 else {}
            events.append(sse({**self.head, "choices": [choice], **first}))
        return events

    def step(self, d: SeqDelta) -> list[str]:
        """Chunks for one sampled delta (content, logprobs, token ids)."""
        self.produced += len(d.token_ids)
        text = _visible(d.text, self.tools_on)
        piece, self.sent[d.index] = text[self.sent[d.index]:], max(self.sent[d.index], len(text))
        extra: dict[str, Any] = {}
        if self.req.logprobs and d.token_ids:
            extra["logprobs"] = chat_logprobs(d, self.text_of)
        if self.req.return_token_ids:
            extra["token_ids"] = d.token_ids
        events = [self.chunk(d.index, {"content": piece}, extra=extra)] if piece or extra else []
        return events + (self.finish(d) if d.finished else [])

    def finish(self, d: SeqDelta) -> list[str]:
        """Held-back text, tool-call deltas and the finish chunk of a row."""
        content, calls = extract_tool_calls(d.text, self.req.tools or []) if self.tools_on else (d.text, [])
        events = []
        rest = (content or "")[self.sent[d.index]:] if calls else d.text[self.sent[d.index]:]
        if rest:
            events.append(self.chunk(d.index, {"content": rest}))
        for i, call in enumerate(calls):
            head = {"index": i, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
            events.append(self.chunk(d.index, {"tool_calls": [head]}))
            tail = {"index": i, "function": {"arguments": call.arguments}}
            events.append(self.chunk(d.index, {"tool_calls": [tail]}))
        if calls and d.finish_reason == "stop":
            reason = "tool_calls"
        else:
            reason = "length" if d.finish_reason == "length" else "stop"
        events.append(self.chunk(d.index, {}, finish=reason, extra={"stop_reason": d.stop_reason}))
        return events

    def closing(self) -> list[str]:
        """Usage chunk (if asked) and the end marker."""
        tail = [sse({**self.head, "choices": [], "usage": usage(len(self.prompt_ids), self.produced)})] \
            if self.req.include_usage else []
        return tail + [sse("[DONE]")]


async def chat_events(engine: Engine, req: ChatCompletionRequest, prompt_ids: list[int],
                      params: GenParams) -> AsyncIterator[str]:
    """SSE events of a streamed chat completion (request already checked)."""
    state = _ChatStream(engine, req, prompt_ids)
    for event in state.opening():
        yield event
    try:
        async for delta in engine.stream(prompt_ids, params):
            _raise_if_aborted(delta)
            for event in state.step(delta):
                yield event
    except Exception as exc:  # noqa: BLE001 - after the 200 status an error can only be an event
        yield _error_event(exc)
        yield sse("[DONE]")
        return
    for event in state.closing():
        yield event


def _text_chunk(head: dict[str, Any], d: SeqDelta, piece: str, req: CompletionRequest,
                text_of: TokenText, offset: int) -> str:
    choice: dict[str, Any] = {
        "index": d.index, "text": piece,
        "logprobs": completion_logprobs(d, text_of, offset=offset) if req.logprobs is not None else None,
        "finish_reason": (finish_reason_of(d) if d.finished else None),
    }
    if d.finished:
        choice["stop_reason"] = d.stop_reason
    if req.return_token_ids:
        choice["token_ids"] = d.token_ids
    return sse({**head, "choices": [choice]})


def finish_reason_of(d: SeqDelta) -> str:
    """OpenAI finish_reason of a finished delta."""
    return "length" if d.finish_reason == "length" else "stop"


async def completion_events(engine: Engine, req: CompletionRequest, prompt_ids: list[int],
                            params: GenParams) -> AsyncIterator[str]:
    """SSE events of a streamed text completion of one prompt (request already checked)."""
    head = {"id": new_id("cmpl"), "object": "text_completion", "created": int(time.time()), "model": engine.name}
    text_of = TokenText(engine.tokenizer, as_ids=req.return_tokens_as_token_ids)
    sent, produced = [0] * params.n, 0
    if req.return_token_ids:
        yield sse({**head, "choices": [], "prompt_token_ids": prompt_ids})
    try:
        async for d in engine.stream(prompt_ids, params):
            _raise_if_aborted(d)
            piece, offset = d.text[sent[d.index]:], sent[d.index]
            sent[d.index], produced = max(sent[d.index], len(d.text)), produced + len(d.token_ids)
            yield _text_chunk(head, d, piece, req, text_of, offset)
    except Exception as exc:  # noqa: BLE001 - after the 200 status an error can only be an event
        yield _error_event(exc)
        yield sse("[DONE]")
        return
    if req.include_usage:
        yield sse({**head, "choices": [], "usage": usage(len(prompt_ids), produced)})
    yield sse("[DONE]")
