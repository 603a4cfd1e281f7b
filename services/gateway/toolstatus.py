"""Parse status of every tool call an upstream returned (recorded on the trace row)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["tool_call_statuses"]


def _status(call: dict[str, Any]) -> str:
    fn = call.get("function") or {}
    if not fn.get("name"):
        return "missing_name"
    args = fn.get("arguments")
    if isinstance(args, dict):
        return "ok"
    try:
        value = json.loads(args or "")
    except (TypeError, ValueError):
        return "invalid_json"
    return "ok" if isinstance(value, dict) else "not_object"


def tool_call_statuses(tool_calls: list[dict[str, Any]]) -> list[str]:
    """One status per returned tool call: ok, invalid_json, not_object or missing_name."""
    return [_status(call) if isinstance(call, dict) else "not_object" for call in tool_calls]
