"""Chat rendering with the real SmolLM2 template, tools in the system prompt."""

from __future__ import annotations

import pytest

from services.inference.chat import render_chat, template_handles_tools, tool_system_block
from services.inference.engine import Engine
from shared.errors import InvalidInput
from shared.schema import Message, ToolInfo

TOOL = ToolInfo(function={"name": "get_weather", "parameters": {"type": "object", "properties": {}}})


def test_plain_chat_matches_the_template(local_engine: Engine) -> None:
    messages = [Message(role="user", content="Hi")]
    direct = local_engine.tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}], add_generation_prompt=True)
    ids = direct["input_ids"] if not isinstance(direct, list) else direct
    assert render_chat(local_engine.tokenizer, messages) == list(ids)


def test_tools_go_into_the_system_message(local_engine: Engine) -> None:
    assert not template_handles_tools(local_engine.tokenizer)
    messages = [Message(role="system", content="Be brief."), Message(role="user", content="Weather?")]
    text = local_engine.decode(render_chat(local_engine.tokenizer, messages, tools=[TOOL]), skip_special_tokens=False)
    assert "Be brief." in text and tool_system_block([TOOL]) in text
    assert text.count("<|im_start|>system") == 1


def test_history_tool_calls_render_as_tool_call_blocks(local_engine: Engine) -> None:
    messages = [
        Message(role="user", content="Weather in Paris?"),
        Message(role="assistant", content=None, tool_calls=[
            {"id": "c1", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]),
        Message(role="tool", tool_call_id="c1", content="11C"),
    ]
    text = local_engine.decode(render_chat(local_engine.tokenizer, messages, tools=[TOOL]), skip_special_tokens=False)
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' in text
    assert "<|im_start|>tool\n11C" in text


def test_a_template_that_refuses_is_bad_input(local_engine: Engine) -> None:
    refusing = {"chat_template": "{{ raise_exception('roles must alternate') }}"}
    with pytest.raises(InvalidInput, match="roles must alternate"):
        render_chat(local_engine.tokenizer, [Message(role="user", content="x")], template_kwargs=refusing)
