"""Tool calls written into assistant text, found by the one shared parser (``shared.toolcalls``).

Formats tried in order, the first that yields calls wins: ``<tool_call>``
blocks (Hermes JSON, or Qwen3-Coder ``<function=...>`` XML inside), Cline XML,
VCP blocks, ReAct ``Action:`` lines. Cline XML and ReAct only count for tools
the row declares (the shared parser's rule: prose looks like them); Hermes and
VCP calls are kept whatever they name, since the markup itself is the intent.
Calls come back as ``(name, arguments)`` with the text minus their markup;
calls inside ``<think>`` reasoning are not calls.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from shared.toolcalls import ParsedCall, detect_family, parse_tool_calls

__all__ = ["TextCall", "parse_text_tool_calls", "strip_tool_response"]

TextCall = tuple[str, dict[str, Any]]

_FORMATS = ("cline_xml", "vcp", "react")
_RESPONSE_RE = re.compile(r"<tool_response>\s*(.*?)\s*(?:</tool_response>|\Z)", re.S)


def _usable(call: ParsedCall) -> bool:
    """Well-formed calls, undeclared names included, and calls cut off only at the end of the text."""
    if call.name is None or not isinstance(call.arguments, dict):
        return False
    return call.status in ("ok", "unknown_tool", "unclosed")


def _without(text: str, calls: list[ParsedCall]) -> str:
    pieces, pos = [], 0
    for call in sorted(calls, key=lambda c: c.start):
        pieces.append(text[pos:call.start])
        pos = max(pos, call.end)
    pieces.append(text[pos:])
    return "".join(pieces)


def _families(text: str) -> list[str]:
    tagged = detect_family(text)
    return ([tagged] if tagged in ("hermes", "qwen3_coder") else []) + list(_FORMATS)


def parse_text_tool_calls(text: str, tools: Iterable[Any]) -> tuple[list[TextCall], str]:
    """Calls of the first format that finds any, and the text without their markup.

    ``tools`` are the row's declared tools (names or OpenAI tool definitions; their
    parameter schemas type XML values).
    """
    if "<" not in text and "Action:" not in text:
        return [], text
    declared = list(tools)
    for family in _families(text):
        calls = [c for c in parse_tool_calls(text, family=family, tools=declared).calls if _usable(c)]
        if calls:
            return [(str(c.name), dict(c.arguments or {})) for c in calls], _without(text, calls).rstrip()
    return [], text


def strip_tool_response(text: str) -> list[str]:
    """Bodies of ``<tool_response>`` blocks in a user message (the text itself if none)."""
    bodies = _RESPONSE_RE.findall(text)
    return bodies if bodies else [text]
