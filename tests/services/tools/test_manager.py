"""ToolManager registry and dispatch."""

from __future__ import annotations

import json
from typing import Any

import pytest

from services.tools.base import BaseTool
from services.tools.calculator import CalculatorTool
from services.tools.manager import ToolManager
from shared.schema import ToolCall, ToolInfo


class Boom(BaseTool):
    """Always raises."""

    function_name = "boom"

    async def execute(self, arguments: dict[str, Any]) -> Any:
        raise RuntimeError("kaput")


class Nameless(BaseTool):
    """No function name."""

    async def execute(self, arguments: dict[str, Any]) -> Any:
        return "never"


class Shape(BaseTool):
    """Reports the type of what it got (schema accepts anything)."""

    function_name = "shape"
    parameters: dict[str, Any] = {}

    def validate(self, arguments: Any) -> Any:
        return arguments

    async def execute(self, arguments: Any) -> str:
        return type(arguments).__name__


def _call(name: Any, arguments: Any = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "c1",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
        **extra,
    }


def test_construction_from_list_dict_none_and_other() -> None:
    calc, boom = CalculatorTool(), Boom()
    assert ToolManager([calc, boom]).names() == ["calculator", "boom"]
    assert ToolManager({"alias": calc}).names() == ["alias"]
    assert ToolManager().names() == [] and len(ToolManager(None)) == 0
    with pytest.raises(TypeError):
        ToolManager("calculator")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ToolManager([Nameless()])


def test_register_overwrites_unregister_returns_and_copy_is_shallow() -> None:
    first, second = Boom(), Boom()
    manager = ToolManager([first, second])
    assert manager.get("boom") is second
    clone = manager.copy()
    clone.register(CalculatorTool())
    assert "calculator" in clone and "calculator" not in manager and clone.get("boom") is second
    assert manager.unregister("boom") is second and manager.unregister("boom") is None
    assert [info.name for info in clone.tool_infos()] == ["boom", "calculator"]
    assert all(isinstance(info, ToolInfo) for info in clone.tool_infos())


@pytest.mark.parametrize(
    "call, kind, fragment",
    [
        ([1], "invalid_call", "got list"),
        ({"id": "x"}, "invalid_call", "function is missing"),
        (_call(""), "invalid_call", "name is missing"),
        (_call("nope"), "unknown_tool", "available tools: boom, calculator"),
        (_call("calculator", "{bad json"), "invalid_json", "not valid JSON"),
        (_call("calculator", 7), "invalid_json", "not int"),
        (_call("calculator", {"expression": 5}), "invalid_arguments", "expression"),
        (_call("boom", "{}"), "tool_exception", "RuntimeError: kaput"),
    ],
)
async def test_dispatch_failures_become_error_results(call: Any, kind: str, fragment: str) -> None:
    manager = ToolManager([CalculatorTool(), Boom()])
    result = await manager.call_structured(call)
    assert (result.ok, result.error_kind, result.status) == (False, kind, "error")
    assert result.content.startswith("Error: ") and fragment in result.content


async def test_unknown_tool_with_empty_registry_says_none() -> None:
    assert "available tools: (none)" in await ToolManager().acall(_call("x"))


@pytest.mark.parametrize(
    "arguments, shape", [(None, "dict"), ("  ", "dict"), ("[1, 2]", "list"), ("3", "int")]
)
async def test_argument_forms(arguments: Any, shape: str) -> None:
    assert await ToolManager([Shape()]).acall(_call("shape", arguments)) == shape


async def test_success_keeps_id_name_and_latency() -> None:
    manager = ToolManager([CalculatorTool()])
    call = ToolCall.model_validate(
        {"id": "abc", "function": {"name": "calculator", "arguments": {"expression": "6*7"}}}
    )
    result = await manager.call_structured(call)
    assert (result.ok, result.content, result.tool_call_id, result.name) == (
        True,
        "42",
        "abc",
        "calculator",
    )
    assert result.error_kind is None and result.latency_s > 0


def test_sync_dispatch_returns_text() -> None:
    manager = ToolManager([CalculatorTool()])
    assert manager(_call("calculator", json.dumps({"expression": "2**5"}))) == "32"
    assert manager(_call("missing")).startswith("Error: unknown tool 'missing'")
