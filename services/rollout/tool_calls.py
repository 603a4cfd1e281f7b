"""Turning a policy reply into attempted calls, and attempted calls into observations."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from services.rollout.ports import (
    ParsedCall,
    PolicyOutput,
    ToolCallParser,
    ToolExecutor,
    ToolResult,
)
from shared.errors import TrajforgeError
from shared.schema.budgets import RolloutLimits

__all__ = ["attempted_calls", "execute_calls", "tool_message", "truncate_output"]


def _from_openai(raw: dict[str, Any]) -> ParsedCall:
    fn = raw.get("function") or {}
    name = str(fn.get("name") or "")
    args = fn.get("arguments")
    call = ParsedCall(id=str(raw.get("id") or ""), name=name, raw=json.dumps(raw, default=str))
    if not name:
        call.status, call.error = "missing_name", "tool call has no function name"
        return call
    try:
        call.arguments = json.loads(args) if isinstance(args, str) and args.strip() else (args or {})
    except json.JSONDecodeError as exc:
        call.status, call.error, call.arguments = "invalid_json", str(exc), args
    return call


def attempted_calls(out: PolicyOutput, parser: ToolCallParser | None, *, turn: int) -> list[ParsedCall]:
    """Structured calls from the upstream if any, else the parser run on the raw text."""
    if out.tool_calls:
        calls = [_from_openai(c) for c in out.tool_calls]
    elif parser is not None:
        calls = list(parser(out.text))
    else:
        calls = []
    for i, call in enumerate(calls):
        if not call.id:
            call.id = f"call_{turn}_{i}"
    return calls


def truncate_output(text: str, max_chars: int | None) -> str:
    """Cap an observation, saying how much was cut."""
    if max_chars is None or len(text) <= max_chars:
        return text
    return text[:max_chars] + f"\n...[truncated {len(text) - max_chars} chars]"


async def _execute_one(call: ParsedCall, tools: ToolExecutor | None, limits: RolloutLimits
                       ) -> ToolResult:
    if not call.ok:
        return ToolResult(ok=False, error_type=call.status,
                          content=f"Error: the tool call could not be parsed ({call.status}): {call.error}")
    if tools is None:
        return ToolResult(ok=False, error_type="no_tools", content="Error: no tools are available.")
    try:
        async with asyncio.timeout(limits.tool_timeout_s):
            return await tools.call(call.to_openai())
    except TimeoutError:
        return ToolResult(ok=False, error_type="timeout",
                          content=f"Error: tool {call.name} timed out after {limits.tool_timeout_s} s.")
    except TrajforgeError as exc:  # a failing tool is an observation, not a failed rollout
        return ToolResult(ok=False, error_type=exc.code, content=f"Error: {exc.message}")


async def execute_calls(calls: list[ParsedCall], tools: ToolExecutor | None,
                        limits: RolloutLimits) -> list[ToolResult]:
    """Run every attempted call concurrently; output is capped to the budget."""
    results = await asyncio.gather(*(_execute_one(c, tools, limits) for c in calls))
    for res in results:
        res.content = truncate_output(res.content, limits.max_tool_output_chars)
    return list(results)


def tool_message(call: ParsedCall, result: ToolResult) -> dict[str, Any]:
    """The OpenAI tool message answering one call."""
    return {"role": "tool", "tool_call_id": call.id, "content": result.content}
