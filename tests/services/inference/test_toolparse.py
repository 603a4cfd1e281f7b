"""Tool calls out of sampled text through the shared parser."""

from __future__ import annotations

import json

from services.inference.toolparse import extract_tool_calls
from shared.schema import ToolInfo

TOOLS = [ToolInfo(function={"name": "add", "parameters": {"type": "object", "properties": {}}})]


def test_well_formed_calls_are_returned_with_fresh_ids() -> None:
    text = 'Adding.\n<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call>\n' \
           '<tool_call>\n{"name": "add", "arguments": {"a": 2}}\n</tool_call>'
    content, calls = extract_tool_calls(text, TOOLS)
    assert content == "Adding." and [json.loads(c.arguments) for c in calls] == [{"a": 1}, {"a": 2}]
    assert len({c.id for c in calls}) == 2 and all(c.id.startswith("chatcmpl-tool-") for c in calls)


def test_text_without_calls_or_with_broken_calls_stays_content() -> None:
    assert extract_tool_calls("just words", TOOLS) == ("just words", [])
    broken = '<tool_call>\n{"name": "add", "arguments": {"a": \n</tool_call>'
    assert extract_tool_calls(broken, TOOLS) == (broken, [])


def test_only_calls_gives_null_content() -> None:
    content, calls = extract_tool_calls('<tool_call>{"name": "add", "arguments": {}}</tool_call>', TOOLS)
    assert content is None and calls[0].name == "add"
