"""SCRIPTED token-mode policies for the console tests, registered as policy backends.

Fixed replies (the real model is too small to produce known tool calls),
tokenised by the real SmolLM2 tokenizer, so jobs run in token mode and store
real token ids, a loss mask and (scripted) logprobs.

- ``console_routing``: on the tool-routing env; member ``i`` of a group calls
  ``query_status`` then answers (members alternate between the right and a
  wrong answer, so a group's rewards and advantages differ); a task saying
  'garbage' writes an unclosed call; 'down' fails the upstream; ``delay=<s>``
  in ``policy.backend.model`` paces each call (so a job stays live a while).
- ``console_long``: one reply of ``policy.backend.model`` tokens (length stop),
  for the 32,000-token page.
"""

from __future__ import annotations

import abc
import asyncio
import json
import re
from typing import Any

from services.rollout.adapters import register_policy
from services.rollout.bridge import TokenBridge
from services.rollout.ports import PolicyOutput
from shared.errors import UpstreamUnavailable
from shared.schema import SamplingParams

__all__ = ["install"]

_USER = re.compile(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", re.DOTALL)
_PASSAGE = ("The rollout service stores every token the policy sampled, the template tokens between turns, "
            "and the tool results, so a trainer can rebuild the exact sequence. ")


def _call(name: str, **arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


class _Scripted(abc.ABC):
    """Common part: the tokenizer as the token bridge, scripted logprobs, a call counter."""

    def __init__(self, tokenizer: Any, model: str | None) -> None:
        self.tok = tokenizer
        self.bridge = TokenBridge(tokenizer)
        self.knobs = dict(part.split("=", 1) for part in (model or "").split(",") if "=" in part)
        self.calls = 0

    def _output(self, text: str, prompt_ids: list[int], *, cap: int | None, stop: bool = True) -> PolicyOutput:
        ids = list(self.tok.encode(text, add_special_tokens=False))
        finish = "stop"
        if cap is not None and len(ids) + 1 > cap:
            ids, finish = ids[:cap], "length"
        elif stop:
            ids.append(self.tok.eos_token_id)
        logprobs = [-(0.05 + (i * 37 % 23) / 7.0) for i in range(len(ids))]
        return PolicyOutput(text=self.tok.decode(ids, skip_special_tokens=True), token_ids=ids, logprobs=logprobs,
                            finish_reason=finish, prompt_tokens=len(prompt_ids))

    def _user(self, prompt_ids: list[int]) -> tuple[str, int]:
        text = self.tok.decode(prompt_ids, skip_special_tokens=False)
        return _USER.findall(text)[0], text.count("<|im_start|>assistant") - 1

    async def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None,
                   sampling: SamplingParams, extra_body: dict[str, Any] | None = None) -> PolicyOutput:
        """Message mode renders the chat and samples the same way."""
        ids = list(self.tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True))
        return await self.generate(ids, sampling=sampling)

    @abc.abstractmethod
    async def generate(self, prompt_ids: list[int], *, sampling: SamplingParams) -> PolicyOutput:
        """The scripted reply of a subclass."""


class RoutingPolicy(_Scripted):
    """SCRIPTED tool-routing replies (see the module docstring)."""

    async def generate(self, prompt_ids: list[int], *, sampling: SamplingParams) -> PolicyOutput:
        """One scripted turn."""
        user, turn = self._user(prompt_ids)
        index = self.calls
        self.calls += 1
        await asyncio.sleep(float(self.knobs.get("delay", 0)))
        if "down" in user:
            raise UpstreamUnavailable("scripted upstream is down")
        if "garbage" in user:
            text = '<tool_call>\n{"name": "query_status", "arguments": {"item_id": '
        elif turn == 0:
            text = "Let me look that up.\n" + _call("query_status", item_id="A1")
        else:
            answer = "A1 is shipped." if (index // 2) % 2 == 0 else "A1 is lost."
            text = _call("respond", content=answer)
        return self._output(text, prompt_ids, cap=sampling.max_tokens)


class LongPolicy(_Scripted):
    """SCRIPTED: one reply cut at ``sampling.max_tokens`` tokens."""

    async def generate(self, prompt_ids: list[int], *, sampling: SamplingParams) -> PolicyOutput:
        """A long passage, cut by the token budget."""
        target = sampling.max_tokens or 1024
        text = _PASSAGE * (target // 20 + 10)
        return self._output(text, prompt_ids, cap=target)


def install(tokenizer: Any) -> None:
    """Register both policies over ``tokenizer``."""
    register_policy("console_routing", lambda model=None, **_: RoutingPolicy(tokenizer, model))
    register_policy("console_long", lambda model=None, **_: LongPolicy(tokenizer, model))
