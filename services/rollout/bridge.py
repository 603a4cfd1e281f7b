"""Token bridges cut from the chat template, so history is never re-tokenised.

After the policy samples an assistant turn, the next prompt is the old ids +
the sampled ids (verbatim) + a *bridge*: whatever the template puts between the
end of the assistant's output and the next assistant prompt (end-of-turn text
the model did not emit, tool messages, the generation prompt). The bridge is
rendered on the delta only, appended to a fixed base conversation whose
rendering is subtracted, so a template that injects a default system prompt
does not inject it again on every turn.
"""

from __future__ import annotations

from typing import Any

from services.rollout.errors import TemplateNotAppendOnly
from services.rollout.ports import ChatTokenizer
from shared.toolcalls.prompt import template_handles_tools, with_tool_block

__all__ = ["TokenBridge"]

_MARK = "\u2063trajforge-assistant\u2063"
_BASE: list[dict[str, Any]] = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": "u"},
    {"role": "assistant", "content": _MARK},
]


class TokenBridge:
    """Renders prompts and inter-turn bridges with one tokenizer's chat template."""

    def __init__(self, tokenizer: ChatTokenizer, *, template_kwargs: dict[str, Any] | None = None):
        self.tokenizer = tokenizer
        self._kwargs = dict(template_kwargs or {})
        self._base_text = self._render(_BASE, generation_prompt=False)
        # Text the template writes after an assistant's content (e.g. "<|im_end|>\n").
        self.turn_tail = self._base_text.split(_MARK)[-1]

    def _render(self, messages: list[dict[str, Any]], *, generation_prompt: bool) -> str:
        text = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=generation_prompt, **self._kwargs)
        return str(text)

    def render(self, messages: list[dict[str, Any]], *, generation_prompt: bool) -> str:
        """The whole conversation rendered by the template (for prompts and checks)."""
        return self._render(messages, generation_prompt=generation_prompt)

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
                   ) -> list[int]:
        """Token ids of the initial prompt, ending with the assistant generation prompt."""
        kwargs: dict[str, Any] = {}
        if tools and template_handles_tools(self.tokenizer):
            kwargs["tools"] = tools
        elif tools:
            # The template would drop them silently: offer them in the system prompt instead.
            messages = with_tool_block(messages, tools)
        text = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True, **kwargs, **self._kwargs)
        return list(self.tokenizer.encode(str(text), add_special_tokens=False))

    def bridge_text(self, new_messages: list[dict[str, Any]], *, ended_with_eos: bool) -> str:
        """Text between the sampled output and the next assistant prompt."""
        extended = self._render(_BASE + new_messages, generation_prompt=True)
        if not extended.startswith(self._base_text):
            raise TemplateNotAppendOnly(
                "The chat template changes earlier turns when messages are appended; "
                "use message mode or a per-turn (step-wise) template for this model.")
        tail = self.turn_tail
        eos = self.tokenizer.eos_token or ""
        if ended_with_eos and eos and tail.startswith(eos):
            tail = tail[len(eos):]
        return tail + extended[len(self._base_text):]

    def bridge_ids(self, new_messages: list[dict[str, Any]], *, ended_with_eos: bool) -> list[int]:
        """Token ids of the bridge (template and tool tokens; never trained on)."""
        text = self.bridge_text(new_messages, ended_with_eos=ended_with_eos)
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def ends_with_eos(self, token_ids: list[int]) -> bool:
        """Whether a sampled turn ended with the end-of-turn token."""
        eos_id = self.tokenizer.eos_token_id
        return bool(token_ids) and eos_id is not None and token_ids[-1] == eos_id
