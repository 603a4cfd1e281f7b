"""Parse statuses of returned tool calls."""

from __future__ import annotations

from services.gateway.toolstatus import tool_call_statuses


def test_each_status() -> None:
    calls = [
        {"function": {"name": "f", "arguments": '{"a": 1}'}},
        {"function": {"name": "f", "arguments": '{"a": '}},
        {"function": {"name": "f", "arguments": "[1]"}},
        {"function": {"name": "", "arguments": "{}"}},
        {"function": {"name": "f", "arguments": {"a": 1}}},
        "junk",
    ]
    assert tool_call_statuses(calls) == ["ok", "invalid_json", "not_object", "missing_name", "ok", "not_object"]  # type: ignore[arg-type]
