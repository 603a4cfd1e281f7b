"""Tool and BaseTool contracts."""

from __future__ import annotations

from typing import Any

import pytest

from services.tools.base import BaseTool, Tool, ToolOutput, truncate_middle
from services.tools.errors import ToolArgumentsInvalid
from shared.schema import ToolInfo


class Echo(BaseTool):
    """Returns its arguments plus a noisy field."""

    function_name = "echo"
    description = "Echo the text."
    parameters = {
        "type": "object",
        "properties": {"text": {"type": "string"}, "times": {"type": "integer", "minimum": 1}},
        "required": ["text"],
    }
    key_fields = ("text", "times")

    async def execute(self, arguments: dict[str, Any]) -> Any:
        if arguments.get("times") == 99:
            return ToolOutput(value="too many", error_kind="tool_exception")
        return {**arguments, "debug": "x" * 50}


class Upper(Tool):
    """A minimal synchronous Tool."""

    def tool_info(self) -> ToolInfo:
        return ToolInfo.model_validate({"name": "upper", "parameters": {"type": "object"}})

    def __call__(self, tool_name: str, arguments: Any) -> str:
        return str(arguments["s"]).upper()


def test_truncate_middle_keeps_head_and_tail_and_reports_the_cut() -> None:
    text = "A" * 50 + "B" * 50
    out = truncate_middle(text, 20)
    assert out.startswith("A" * 10) and out.endswith("B" * 10) and "[80 chars truncated]" in out
    assert truncate_middle("short", 20) == "short"


def test_get_schema_is_an_openai_function_tool() -> None:
    schema = Echo().get_schema().model_dump()
    assert schema["type"] == "function" and schema["function"]["name"] == "echo"
    assert schema["function"]["parameters"]["required"] == ["text"]
    assert Echo().name == "echo"


@pytest.mark.parametrize(
    "arguments, where",
    [
        ({}, "(root)"),
        ({"text": 3}, "text"),
        ({"text": "a", "times": 0}, "times"),
        ([1, 2], "(root)"),
    ],
)
def test_validate_refuses_arguments_against_the_schema(arguments: Any, where: str) -> None:
    with pytest.raises(ToolArgumentsInvalid) as info:
        Echo().validate(arguments)
    assert info.value.param == where and info.value.code == "invalid_arguments"


def test_format_output_extracts_key_fields_and_truncates() -> None:
    tool = Echo()
    assert tool.format_output({"text": "hi", "debug": "zzz"}) == '{"text": "hi"}'
    tool.max_output_chars = 30
    assert "[" in tool.format_output("y" * 100) and len(tool.format_output("y" * 100)) < 70


async def test_arun_validates_executes_formats_and_passes_error_kind() -> None:
    assert await Echo().arun("echo", {"text": "hi", "times": 2}) == (
        '{"text": "hi", "times": 2}',
        None,
    )
    assert await Echo().arun("echo", {"text": "hi", "times": 99}) == ("too many", "tool_exception")


def test_sync_call_runs_without_an_event_loop() -> None:
    assert Echo()("echo", {"text": "yo"}) == '{"text": "yo"}'


async def test_plain_tool_gets_async_twins_from_the_base() -> None:
    assert await Upper().acall("upper", {"s": "abc"}) == "ABC"
    assert await Upper().arun("upper", {"s": "q"}) == ("Q", None)
