"""Parse statuses of returned tool calls, from the shared parser."""

from __future__ import annotations

from services.gateway.toolstatus import tool_call_statuses

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def call(name: str, arguments: object) -> dict:
    return {"id": "x", "type": "function", "function": {"name": name, "arguments": arguments}}


def test_structured_calls() -> None:
    calls = [call("f", '{"a": 1}'), call("f", '{"a": '), call("f", "[1]"), call("", "{}"), call("g", "{}"), "junk"]
    assert tool_call_statuses({"tool_calls": calls}, TOOLS) == [
        "ok", "invalid_json", "not_object", "missing_name", "unknown_tool", "not_object",
    ]
    assert tool_call_statuses({"tool_calls": [call("g", "{}")]}) == ["ok"]  # no tools offered: name not checked


def test_calls_left_in_text_are_parsed() -> None:
    text = 'Sure. <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call><tool_call>{"name": "f", "arguments": {"a": </tool_call>'
    assert tool_call_statuses({"content": text}, TOOLS) == ["ok", "invalid_json"]
    assert tool_call_statuses({"content": "no calls here"}) == []
    assert tool_call_statuses({"content": None}) == []
