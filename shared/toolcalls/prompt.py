"""Tool schemas in the system prompt, for chat templates that know nothing of tools.

One rendering serves the local engine (message mode) and token-level rollouts, so a
model sees the same offer of tools, in the hermes call format, on both paths.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["template_handles_tools", "tool_system_block", "with_tool_block"]


def template_handles_tools(tokenizer: Any) -> bool:
    """True when the chat template renders a ``tools`` argument itself."""
    template = getattr(tokenizer, "chat_template", None) or ""
    return "tools" in template


def tool_system_block(tools: list[dict[str, Any]]) -> str:
    """System-prompt text that offers ``tools`` (OpenAI function-tool dicts) and says how to call them."""
    schemas = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    return (
        "You can call functions. Their JSON schemas are listed between <tools> and </tools>:\n"
        f"<tools>\n{schemas}\n</tools>\n"
        "To call a function, reply with one block per call, each holding a JSON object "
        "with the function name and its arguments:\n"
        '<tool_call>\n{"name": "function_name", "arguments": {"arg": "value"}}\n</tool_call>'
    )


def with_tool_block(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with the tool block appended to the system message (or as a new first one)."""
    block = tool_system_block(tools)
    if messages and messages[0].get("role") == "system":
        first = {**messages[0], "content": f"{messages[0].get('content') or ''}\n\n{block}".strip()}
        return [first, *messages[1:]]
    return [{"role": "system", "content": block}, *messages]
