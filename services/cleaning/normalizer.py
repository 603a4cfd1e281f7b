"""MessageNormalizer: three passes over messages (heartbeat strip, text tool calls, merge); never drops.

Deliberate changes from the reference:
- only agent-framework polling is a heartbeat (HEARTBEAT.md / HEARTBEAT_OK, or a message that is
  nothing but "heartbeat"/"keepalive"); questions about heartbeats or TCP keepalive stay;
- rewritten assistant turns keep every other field (reasoning_content above all);
- tool_calls are written as a list in OpenAI shape (arguments a JSON string);
- ``<tool_response>`` wrappers are removed and multi-call results are split, one tool message each;
- an assistant with empty content but reasoning is kept in the merge pass.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import orjson
from pydantic import Field

from services.cleaning.base import Row, StepOutput
from services.cleaning.params import ParamStep, StepParams
from services.cleaning.text import has_media, is_blank, message_text, normalize_tool_calls, reasoning_of
from services.cleaning.toolcall_text import parse_text_tool_calls, strip_tool_response

__all__ = ["MessageNormalizer", "NormalizerParams"]

_HEARTBEAT_RE = re.compile(
    r"HEARTBEAT(?:\.md|_OK)\b|^\W*(?:heartbeat|keep[\s_-]?alive|ping)\W*$", re.I
)
Msg = dict[str, Any]


class NormalizerParams(StepParams):
    """Switches of MessageNormalizer's passes."""

    strip_heartbeats: bool = Field(True, description="Pass 0: drop agent heartbeat polling rounds.")
    parse_text_tool_calls: bool = Field(True, description="Pass 1: rewrite tool calls written in text.")
    merge_same_role: bool = Field(True, description="Pass 2: merge consecutive same-role messages.")


def _is_heartbeat(msg: Msg) -> bool:
    content = msg.get("content")
    head = (content if type(content) is str else message_text(content))[:300].strip()
    low = head.lower()
    # Cheap screen first: every heartbeat form contains one of these words.
    if "heartbeat" not in low and "alive" not in low and "ping" not in low:
        return False
    return bool(_HEARTBEAT_RE.search(head))


def strip_heartbeats(messages: list[Any]) -> list[Msg]:
    """Pass 0: drop heartbeat polls and their replies; developer becomes system."""
    out: list[Msg] = []
    skip_next = False
    for m in messages:
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if role == "developer":
            m = {**m, "role": "system"}
            role = "system"
        if role == "user" and _is_heartbeat(m):
            skip_next = True
            continue
        # Hot loop: a missing tool_calls key (most messages) needs no call to normalize it.
        if role == "assistant" and ((calls := m.get("tool_calls")) is None or not normalize_tool_calls(calls)) \
                and (skip_next or _is_heartbeat(m)):
            skip_next = False
            continue
        skip_next = False
        out.append(m)
    while out and out[0].get("role") not in ("user", "system"):
        out.pop(0)
    return out


def _declared_tools(row: Row) -> list[dict[str, Any]]:
    """The row's tools as ``{name, parameters}`` (parameters only when they are a schema object)."""
    tools = []
    for t in row.get("tools") or []:
        fn = t.get("function", t) if isinstance(t, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            params = fn.get("parameters")
            tools.append({"name": fn["name"], "parameters": params if isinstance(params, dict) else {}})
    return tools


def _rewrite(msg: Msg, tools: Sequence[Any], counter: list[int]) -> Msg | None:
    if msg.get("role") != "assistant" or normalize_tool_calls(msg.get("tool_calls")):
        return None
    calls, rest = parse_text_tool_calls(message_text(msg.get("content")), tools)
    if not calls:
        return None
    out_calls = []
    for name, args in calls:
        counter[0] += 1
        arguments = orjson.dumps(args).decode() if isinstance(args, dict) else str(args)
        out_calls.append({"id": f"call_norm_{counter[0]:04d}", "type": "function",
                          "function": {"name": name, "arguments": arguments}})
    return {**msg, "content": rest, "tool_calls": out_calls}


def _may_have_text_calls(messages: list[Msg]) -> bool:
    # The parsers need markup or an "Action:" line; most rows have neither, and then the
    # row's tool names (long lists in function-calling data) are never collected.
    for m in messages:
        if m.get("role") == "assistant" and ((calls := m.get("tool_calls")) is None or not normalize_tool_calls(calls)):
            content = m.get("content")
            text = content if type(content) is str else message_text(content)
            if "<" in text or "Action:" in text:
                return True
    return False


def _consume_results(messages: list[Msg], start: int, calls: list[Msg]) -> tuple[list[Msg], int]:
    bodies: list[str] = []
    i = start
    while i < len(messages) and len(bodies) < len(calls):
        m = messages[i]
        if m.get("role") != "user" or is_blank(m):
            break
        bodies.extend(strip_tool_response(message_text(m.get("content"))))
        i += 1
    if len(bodies) != len(calls):  # results do not line up with calls: leave the users alone
        return [], start
    return [{"role": "tool", "content": b, "tool_call_id": c["id"]} for b, c in zip(bodies, calls)], i


def rewrite_text_tool_calls(messages: list[Msg], tools: Sequence[Any]) -> list[Msg]:
    """Pass 1: assistant turns with tool calls in text become OpenAI tool calls + tool results."""
    out: list[Msg] = []
    counter, i = [0], 0
    while i < len(messages):
        new = _rewrite(messages[i], tools, counter)
        out.append(new or messages[i])
        i += 1
        if new is not None:
            results, i = _consume_results(messages, i, new["tool_calls"])
            out.extend(results)
    return out


def _keepable(m: Msg) -> bool:
    # Reasoning alone is a payload: dropping it would lose the model's thinking.
    return not is_blank(m) or bool(reasoning_of(m))


def _merge_run(run: list[Msg]) -> list[Msg]:
    if len(run) == 1:  # most runs: nothing to merge
        content = run[0].get("content")
        # Non-blank string content is keepable; only the other cases need the full test.
        return run if (type(content) is str and content.strip()) or _keepable(run[0]) else []
    live = [m for m in run if _keepable(m)]
    if len(live) <= 1:
        return live
    kinds = {isinstance(m.get("content"), list) for m in live}
    if len(kinds) > 1:
        return live
    if kinds == {True}:
        return [{**live[0], "content": [p for m in live for p in m["content"]]}]
    text = "\n".join(message_text(m.get("content")).strip() for m in live)
    return [{**live[0], "content": text}]


def merge_same_role(messages: list[Msg]) -> list[Msg]:
    """Pass 2: merge runs of same-role non-atomic messages; drop blank messages (tool results, and turns
    other than a final blank assistant reply)."""
    out: list[Msg] = []
    run: list[Msg] = []
    for m in messages:
        role = m.get("role")
        # Tool results and tool calls are atomic (the hot loop): most messages have no tool_calls key to normalize.
        atomic = role == "tool" or ((calls := m.get("tool_calls")) is not None and bool(normalize_tool_calls(calls)))
        if atomic or (run and role != run[0].get("role")):
            if run:
                out.extend(_merge_run(run))
            run = []
        if atomic:
            if not (role == "tool" and is_blank(m) and not has_media(m.get("content"))):
                out.append(m)
        else:
            run.append(m)
    merged = _merge_run(run)
    out.extend(merged)
    if run and not merged and run[-1].get("role") == "assistant":
        # A blank reply that ends the row stays: it is a failed generation, which the sanity step
        # drops, not a gap to close (trimming it would make the row look answered one turn earlier).
        out.append(run[-1])
    return out


class MessageNormalizer(ParamStep[NormalizerParams]):
    """Normalise messages in three passes; never drops rows."""

    Params = NormalizerParams

    def process(self, rows: list[Row]) -> StepOutput:
        """Rows with normalised messages (copies; the input rows are not mutated)."""
        return [self.normalize_row(r) for r in rows], []

    def normalize_row(self, row: Row) -> Row:
        """One row with its messages normalised."""
        msgs = row.get("messages")
        if not isinstance(msgs, list) or not msgs:
            return row
        p = self.params
        out = strip_heartbeats(msgs) if p.strip_heartbeats else [m for m in msgs if isinstance(m, dict)]
        if p.parse_text_tool_calls and _may_have_text_calls(out):
            out = rewrite_text_tool_calls(out, _declared_tools(row))
        if p.merge_same_role:
            out = merge_same_role(out)
        return {**row, "messages": out}
