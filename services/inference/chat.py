"""Render chat messages (and tools) to prompt token ids with the model's own template.

When the template knows nothing of tools (SmolLM2's does not), the tool schemas
go into the system message as a ``<tools>`` block with one JSON schema per line,
and the model is asked to answer a call as ``<tool_call>{"name", "arguments"}</tool_call>``
(the hermes family of the shared tool-call parser). Earlier assistant tool calls
are rendered back in that same form, so history and sampled text agree.
"""

from __future__ import annotations

import json
from typing import Any

from shared.errors import InvalidInput
from shared.schema import Message, ToolInfo
from shared.toolcalls.prompt import template_handles_tools, with_tool_block
from shared.toolcalls.prompt import tool_system_block as _tool_block

__all__ = ["TOOL_FAMILY", "render_chat", "template_handles_tools", "tool_system_block"]

TOOL_FAMILY = "hermes"


def tool_system_block(tools: list[ToolInfo]) -> str:
    """System-prompt text that offers ``tools`` and says how to call them."""
    return _tool_block([t.model_dump(mode="json") for t in tools])


def _call_text(message: Message) -> str:
    blocks = [
        "<tool_call>\n" + json.dumps({"name": c.name, "arguments": _loads_or_text(c.arguments)},
                                     ensure_ascii=False) + "\n</tool_call>"
        for c in message.tool_calls or []
    ]
    return "\n".join([message.text(), *blocks]).strip("\n") if blocks else message.text()


def _loads_or_text(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments  # keep what the model wrote; the history must not change


def _plain(message: Message) -> dict[str, str]:
    role = "system" if message.role == "developer" else message.role
    text = _call_text(message) if message.role == "assistant" else message.text()
    return {"role": role, "content": text}


def _with_tools(messages: list[dict[str, str]], tools: list[ToolInfo]) -> list[dict[str, str]]:
    return with_tool_block(messages, [t.model_dump(mode="json") for t in tools])


def render_chat(tokenizer: Any, messages: list[Message], *, tools: list[ToolInfo] | None = None,
                add_generation_prompt: bool = True, template_kwargs: dict[str, Any] | None = None) -> list[int]:
    """Prompt token ids for ``messages``; tools go through the template or the system prompt."""
    kwargs = dict(template_kwargs or {})
    if tools and template_handles_tools(tokenizer):
        plain = [m.to_openai() for m in messages]
        kwargs["tools"] = [t.model_dump(mode="json") for t in tools]
    else:
        plain = [_plain(m) for m in messages]
        plain = _with_tools(plain, tools) if tools else plain
    try:
        encoded = tokenizer.apply_chat_template(plain, add_generation_prompt=add_generation_prompt,
                                                tokenize=True, **kwargs)
    except Exception as exc:  # noqa: BLE001 - template errors are the caller's bad input
        raise InvalidInput(f"The chat template could not render these messages: {exc}",
                           param="messages") from exc
    ids = encoded["input_ids"] if not isinstance(encoded, list) else encoded
    return [int(i) for i in ids]
