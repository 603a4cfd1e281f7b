"""Tool calls out of sampled text, through the shared parser (one parser for the suite)."""

from __future__ import annotations

import importlib
import uuid
from typing import Any

from services.inference.chat import TOOL_FAMILY
from shared.schema import ToolCall, ToolInfo

__all__ = ["TOOL_CALL_OPEN", "extract_tool_calls", "new_call_id"]

TOOL_CALL_OPEN = "<tool_call>"


def new_call_id() -> str:
    """A fresh tool-call id in vLLM's style."""
    return f"chatcmpl-tool-{uuid.uuid4().hex[:16]}"


def _shared_parser() -> Any | None:
    try:
        return importlib.import_module("shared.toolcalls")
    except ImportError:
        return None


def extract_tool_calls(text: str, tools: list[ToolInfo]) -> tuple[str | None, list[ToolCall]]:
    """Split text into (content, well-formed tool calls); content is None when only calls remain."""
    parser = _shared_parser()
    if parser is None or TOOL_CALL_OPEN not in text:
        return text, []
    return _from_parser(parser, text, tools)


def _from_parser(parser: Any, text: str, tools: list[ToolInfo]) -> tuple[str | None, list[ToolCall]]:
    result = parser.parse_tool_calls(text, family=TOOL_FAMILY, tools=tools)
    calls = [ToolCall(id=new_call_id(), function={"name": c.name, "arguments": c.arguments})
             for c in result.calls if c.status == "ok"]
    content = result.content.strip() if calls else text
    return (content or None), calls
