"""TokenBridge with the real SmolLM2 chat template."""

from __future__ import annotations

from typing import Any

import pytest

from services.rollout.bridge import TokenBridge
from services.rollout.errors import TemplateNotAppendOnly


def test_bridge_is_the_template_text_between_turns(smol_tokenizer: Any) -> None:
    bridge = TokenBridge(smol_tokenizer)
    tool = [{"role": "tool", "content": "5"}]
    assert bridge.bridge_text(tool, ended_with_eos=True) == (
        "\n<|im_start|>tool\n5<|im_end|>\n<|im_start|>assistant\n")
    # Without the model's end-of-turn token, the bridge supplies it.
    assert bridge.bridge_text(tool, ended_with_eos=False).startswith("<|im_end|>\n<|im_start|>tool")


def test_bridge_never_repeats_the_default_system_prompt(smol_tokenizer: Any) -> None:
    bridge = TokenBridge(smol_tokenizer)
    text = bridge.bridge_text([{"role": "tool", "content": "r"}], ended_with_eos=True)
    assert "SmolLM" not in text and "system" not in text


def test_bridge_ids_decode_to_the_bridge_text(smol_tokenizer: Any) -> None:
    bridge = TokenBridge(smol_tokenizer)
    msgs = [{"role": "tool", "content": "a"}, {"role": "tool", "content": "b"}]
    ids = bridge.bridge_ids(msgs, ended_with_eos=True)
    assert smol_tokenizer.decode(ids, skip_special_tokens=False) == bridge.bridge_text(msgs, ended_with_eos=True)


class _RewritingTemplate:
    """A template that rewrites earlier turns (like thinking-stripping templates)."""

    eos_token = "</s>"
    eos_token_id = 0

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> str:
        n = len(conversation)
        return "".join(f"[{n}]{m['role']}:{m['content']}</s>" for m in conversation)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, token_ids: Any, skip_special_tokens: bool = False) -> str:
        return "".join(chr(i) for i in token_ids)


def test_template_that_rewrites_history_is_refused() -> None:
    bridge = TokenBridge(_RewritingTemplate())
    with pytest.raises(TemplateNotAppendOnly):
        bridge.bridge_text([{"role": "tool", "content": "x"}], ended_with_eos=True)


def test_tools_reach_the_prompt_when_the_template_ignores_them(smol_tokenizer: Any) -> None:
    # SmolLM2's template has no tools argument: the schemas go into the system prompt, as in message mode.
    from shared.toolcalls.prompt import tool_system_block

    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    bridge = TokenBridge(smol_tokenizer)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Oslo?"}]
    text = smol_tokenizer.decode(bridge.prompt_ids(messages, [tool]))
    assert "Be brief." in text and tool_system_block([tool]) in text
    assert "get_weather" not in smol_tokenizer.decode(bridge.prompt_ids(messages))
