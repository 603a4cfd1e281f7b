"""Parsers for tool calls written into assistant text (Hermes, Cline XML, VCP, ReAct).

Each parser returns ``(calls, remaining_text)`` with calls as ``(name, arguments)``.
Cline XML and ReAct are only trusted for names the row declares as tools: without
that check, an answer that shows ``<config><name>app</name></config>`` or an
"Action:" line in prose would become a tool call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Any

import orjson

__all__ = ["ParsedCall", "parse_text_tool_calls", "strip_tool_response"]

ParsedCall = tuple[str, dict[str, Any]]

_HERMES_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S)
_FUNC_RE = re.compile(r"<function=([^>\s]+)>(.*?)(?:</function>|\Z)", re.S)
_PARAM_RE = re.compile(r"<parameter=([^>\s]+)>(.*?)</parameter>", re.S)
_XML_RE = re.compile(r"<([a-z][a-z0-9_]*)>(.*?)</\1>", re.S)
_CHILD_RE = re.compile(r"<([A-Za-z_][\w\-]*)>(.*?)</\1>", re.S)
_VCP_RE = re.compile(r"<<<\[TOOL_REQUEST\]>>>(.*?)<<<\[END_TOOL_REQUEST\]>>>", re.S)
_VCP_KV_RE = re.compile(r"([\w\-]+)\s*[:：]\s*「始(?:ESCAPE)?」(.*?)「末(?:ESCAPE)?」", re.S)
_REACT_RE = re.compile(r"^[ \t]*Action:[ \t]*([\w\-./]+)\[(.*)\][ \t]*$", re.M)
_RESPONSE_RE = re.compile(r"<tool_response>\s*(.*?)\s*(?:</tool_response>|\Z)", re.S)


def _json_or_str(value: str) -> Any:
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return value


def _hermes_block(body: str) -> ParsedCall | None:
    fn = _FUNC_RE.search(body)
    if fn:
        args = {k: _json_or_str(v.strip()) for k, v in _PARAM_RE.findall(fn.group(2))}
        return fn.group(1), args
    obj = _json_or_str(body.strip())
    if not isinstance(obj, dict):
        return None
    name = obj.get("name") or obj.get("tool_name")
    raw = obj.get("arguments", obj.get("parameters", {}))
    parsed = _json_or_str(raw) if isinstance(raw, str) else raw
    return (name, parsed if isinstance(parsed, dict) else {}) if isinstance(name, str) and name else None


def _hermes(text: str, _tools: Collection[str]) -> tuple[list[ParsedCall], str]:
    if "<tool_call>" not in text:
        return [], text
    calls = [c for c in (_hermes_block(m.group(1)) for m in _HERMES_RE.finditer(text)) if c]
    return calls, _HERMES_RE.sub("", text)


def _cline(text: str, tools: Collection[str]) -> tuple[list[ParsedCall], str]:
    calls, spans = [], []
    for m in _XML_RE.finditer(text):
        children = _CHILD_RE.findall(m.group(2))
        if m.group(1) in tools and children:
            calls.append((m.group(1), {k: v.strip() for k, v in children}))
            spans.append(m.group(0))
    for span in spans:
        text = text.replace(span, "", 1)
    return calls, text


def _vcp(text: str, _tools: Collection[str]) -> tuple[list[ParsedCall], str]:
    calls = []
    for m in _VCP_RE.finditer(text):
        kv = {k: v.strip() for k, v in _VCP_KV_RE.findall(m.group(1))}
        name = kv.pop("tool_name", "")
        if name:
            calls.append((name, kv))
    return calls, (_VCP_RE.sub("", text) if calls else text)


def _react(text: str, tools: Collection[str]) -> tuple[list[ParsedCall], str]:
    hits = [m for m in _REACT_RE.finditer(text) if m.group(1) in tools]
    calls: list[ParsedCall] = [(m.group(1), {"input": m.group(2)}) for m in hits]
    for m in hits:
        text = text.replace(m.group(0), "", 1)
    return calls, text


_PARSERS: tuple[Callable[[str, Collection[str]], tuple[list[ParsedCall], str]], ...] = (
    _hermes, _cline, _vcp, _react,
)


def parse_text_tool_calls(text: str, tools: Collection[str]) -> tuple[list[ParsedCall], str]:
    """Calls found by the first parser that finds any, and the text without their markup."""
    if "<" not in text and "Action:" not in text:
        return [], text
    for parser in _PARSERS:
        calls, rest = parser(text, tools)
        if calls:
            return calls, rest.rstrip()
    return [], text


def strip_tool_response(text: str) -> list[str]:
    """Bodies of ``<tool_response>`` blocks in a user message (the text itself if none)."""
    bodies = _RESPONSE_RE.findall(text)
    return bodies if bodies else [text]
