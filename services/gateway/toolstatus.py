"""Parse status of every tool call in an upstream answer, from the shared parser.

Structured calls (the upstream already parsed them) are checked the way the
shared parser checks a call: a name, arguments that decode to an object, a
tool the request offered. When the upstream returned no structured calls, the
text content is run through the shared parser, so a malformed call the upstream
left in the text still gets its status (invalid_json, unclosed, ...).
"""

from __future__ import annotations

from typing import Any

from shared.toolcalls import CallStatus, normalise_arguments, parse_tool_calls, tool_schemas

__all__ = ["tool_call_statuses"]


def _structured_status(call: Any, schemas: dict[str, Any] | None) -> CallStatus:
    if not isinstance(call, dict):
        return "not_object"
    fn = call.get("function") or {}
    name = fn.get("name")
    if not isinstance(name, str) or not name.strip():
        return "missing_name"
    status, _, _ = normalise_arguments(fn.get("arguments"))
    if status == "ok" and schemas is not None and name not in schemas:
        return "unknown_tool"
    return status


def tool_call_statuses(message: dict[str, Any], tools: list[Any] | None = None) -> list[str]:
    """One status per attempted call in an assistant message (structured or in its text)."""
    schemas = tool_schemas(tools) if tools else None
    calls = message.get("tool_calls") or []
    if calls:
        return [_structured_status(call, schemas) for call in calls]
    content = message.get("content")
    if isinstance(content, str) and content:
        return [c.status for c in parse_tool_calls(content, tools=tools or None).calls]
    return []
