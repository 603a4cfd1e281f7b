"""Tool calls out of sampled text, through the shared parser (one parser for the suite)."""

from __future__ import annotations

import uuid

from services.inference.chat import TOOL_FAMILY
from shared.schema import ToolCall, ToolInfo
from shared.toolcalls import parse_tool_calls

__all__ = ["TOOL_CALL_OPEN", "extract_tool_calls", "new_call_id"]

TOOL_CALL_OPEN = "<tool_call>"


def new_call_id(_: int = 0) -> str:
    """A fresh tool-call id in vLLM's style (``chatcmpl-tool-<hex>``)."""
    return f"chatcmpl-tool-{uuid.uuid4().hex[:16]}"


def extract_tool_calls(text: str, tools: list[ToolInfo]) -> tuple[str | None, list[ToolCall]]:
    """Split text into (content, well-formed calls); content is None when only calls remain.

    Malformed attempts are not returned as calls: their text stays in the content,
    so the caller sees exactly what the model wrote.
    """
    if TOOL_CALL_OPEN not in text:
        return text, []
    result = parse_tool_calls(text, family=TOOL_FAMILY, tools=tools)
    calls = result.to_tool_calls(new_call_id)
    if not calls:
        return text, []
    return (result.content.strip() or None), calls
