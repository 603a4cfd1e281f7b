"""Test doubles that run for real: a scripted policy, a function-registry tool executor,
and a minimal hermes-style tool-call parser (the shared parser arrives later)."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Callable
from typing import Any

from services.rollout.ports import ParsedCall, PolicyOutput, ToolResult
from shared.errors import UpstreamUnavailable
from shared.schema import SamplingParams

_CALL = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.DOTALL)
_USER = re.compile(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", re.DOTALL)


def hermes_parser(text: str) -> list[ParsedCall]:
    """Every ``<tool_call>{json}</tool_call>`` block, with a parse status."""
    calls: list[ParsedCall] = []
    for body, close in _CALL.findall(text):
        call = ParsedCall(raw=body)
        if not close:
            call.status, call.error = "unclosed", "no </tool_call>"
        else:
            try:
                data = json.loads(body)
                call.name, call.arguments = str(data.get("name") or ""), data.get("arguments", {})
                if not call.name:
                    call.status, call.error = "missing_name", "no name"
            except json.JSONDecodeError as exc:
                call.status, call.error = "invalid_json", str(exc)
        calls.append(call)
    return calls


def tool_call_text(name: str, **arguments: Any) -> str:
    """A hermes tool-call block as a model would write it."""
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


Script = Callable[[str, int], str]


class ScriptedPolicy:
    """A scripted policy: fixed replies chosen by (first user text, turn index),
    tokenised by the real SmolLM2 tokenizer; optional latency, failures, length stops."""

    def __init__(self, tokenizer: Any, script: Script, *, delay_s: Callable[[int], float] | None = None,
                 fail_calls: set[int] | None = None, length_on: set[int] | None = None,
                 char_level: bool = False) -> None:
        self.tok, self.script, self.delay_s = tokenizer, script, delay_s
        self.fail_calls, self.length_on = fail_calls or set(), length_on or set()
        self.char_level = char_level
        self.calls = 0
        self.inflight = 0
        self.max_inflight = 0
        self.cancelled = 0
        self.max_tokens_seen: list[int | None] = []

    def _ids(self, text: str) -> list[int]:
        if self.char_level:  # a valid but non-canonical tokenisation, as a sampler may produce
            return [i for ch in text for i in self.tok.encode(ch, add_special_tokens=False)]
        return list(self.tok.encode(text, add_special_tokens=False))

    async def _reply(self, user: str, turn: int, sampling: SamplingParams, prompt_tokens: int) -> PolicyOutput:
        index = self.calls
        self.calls += 1
        self.max_tokens_seen.append(sampling.max_tokens)
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            if self.delay_s is not None:
                await asyncio.sleep(self.delay_s(index))
            if index in self.fail_calls:
                raise UpstreamUnavailable("scripted upstream is down")
            return self._output(self.script(user, turn), index, sampling, prompt_tokens)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.inflight -= 1

    def _output(self, text: str, index: int, sampling: SamplingParams, prompt_tokens: int) -> PolicyOutput:
        ids = self._ids(text)
        finish = "stop"
        cap = sampling.max_tokens
        if index in self.length_on or (cap is not None and len(ids) + 1 > cap):
            ids, finish = ids[: cap or len(ids)], "length"
        else:
            ids = ids + [self.tok.eos_token_id]
        logprobs = [-0.1 - (i % 7) / 10 for i in range(len(ids))]
        body = ids[:-1] if finish == "stop" else ids
        return PolicyOutput(text=self.tok.decode(body, skip_special_tokens=False), token_ids=ids,
                            logprobs=logprobs, finish_reason=finish, prompt_tokens=prompt_tokens)

    async def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None,
                   sampling: SamplingParams, extra_body: dict[str, Any] | None = None) -> PolicyOutput:
        user = next(str(m["content"]) for m in messages if m["role"] == "user")
        turn = sum(1 for m in messages if m["role"] == "assistant")
        rendered = self.tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        prompt_tokens = len(self.tok.encode(rendered, add_special_tokens=False))
        return await self._reply(user, turn, sampling, prompt_tokens)

    async def generate(self, prompt_ids: list[int], *, sampling: SamplingParams) -> PolicyOutput:
        text = self.tok.decode(prompt_ids, skip_special_tokens=False)
        user = _USER.findall(text)[0]
        turn = text.count("<|im_start|>assistant") - 1
        return await self._reply(user, turn, sampling, len(prompt_ids))


class FunctionTools:
    """A real ToolExecutor over a registry of Python functions (sync or async)."""

    def __init__(self, **functions: Callable[..., Any]) -> None:
        self.functions = functions
        self.calls: list[dict[str, Any]] = []

    def tool_infos(self) -> list[dict[str, Any]]:
        return [{"type": "function", "function": {"name": n, "description": f.__doc__ or "",
                 "parameters": {"type": "object", "properties": {}}}} for n, f in self.functions.items()]

    async def call(self, tool_call: dict[str, Any]) -> ToolResult:
        self.calls.append(tool_call)
        name = tool_call["function"]["name"]
        fn = self.functions.get(name)
        if fn is None:
            return ToolResult(ok=False, error_type="unknown_tool", content=f"Error: unknown tool {name}")
        args = json.loads(tool_call["function"]["arguments"] or "{}")
        result = fn(**args)
        if inspect.isawaitable(result):
            result = await result
        return ToolResult(content=str(result))
