"""A SCRIPTED token-mode policy for rollout tests against remote services, registered as ``scripted_tokens``.

Fixed replies chosen from the decoded prompt (its last user turn and how many assistant turns it
holds), tokenised by the real SmolLM2 tokenizer, with the end-of-turn token appended; labelled
scripted because the real model is too small to produce known tool calls. ``policy.backend.model``
is ``<script>[,delay=<seconds>]``. Every call is kept (prompt ids, sampled ids) for token checks.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from services.rollout.bridge import TokenBridge
from services.rollout.ports import PolicyOutput
from shared.schema import SamplingParams

__all__ = ["SCRIPTS", "TokenScripted"]

_USER = re.compile(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", re.DOTALL)


def _call(name: str, **arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def _routing(user: str, turn: int) -> str:
    if turn == 0:
        return "Let me look.\n" + _call("query_status", item_id="A1")
    return _call("respond", content="A1 is shipped.")


def _counter(user: str, turn: int) -> str:
    return [_call("add", delta=2), _call("add", delta=3), "Done: the counter moved by 5."][min(turn, 2)]


def _calc(user: str, turn: int) -> str:
    return _call("calculator", expression="2+3*4") if turn == 0 else "The answer is 14."


def _lookup(user: str, turn: int) -> str:
    return _call("lookup_item", item="A1") if turn == 0 else "A1 is in aisle 7."


SCRIPTS = {"routing": _routing, "counter": _counter, "calc": _calc, "lookup": _lookup}


class TokenScripted:
    """SCRIPTED token-mode policy: the reply depends on the decoded prompt's user turn and turn count."""

    def __init__(self, tokenizer: Any, model: str) -> None:
        name, *knobs = model.split(",")  # "<script>[,delay=<seconds>]"
        options = dict(k.split("=", 1) for k in knobs)
        self.tok, self.script, self.bridge = tokenizer, SCRIPTS[name], TokenBridge(tokenizer)
        self.delay_s = float(options.get("delay", 0.0))
        self.calls: list[tuple[list[int], list[int]]] = []
        self.started = 0

    async def generate(self, prompt_ids: list[int], *, sampling: SamplingParams) -> PolicyOutput:
        """Decode, pick the scripted reply, return its ids with the end-of-turn token."""
        self.started += 1
        await asyncio.sleep(self.delay_s)
        text = self.tok.decode(prompt_ids, skip_special_tokens=False)
        turn = text.count("<|im_start|>assistant") - 1
        reply = self.script(_USER.findall(text)[-1], turn)
        ids = list(self.tok.encode(reply, add_special_tokens=False))
        ids.append(self.tok.eos_token_id)
        self.calls.append((list(prompt_ids), ids))
        return PolicyOutput(text=reply, token_ids=ids, logprobs=[-0.25] * len(ids), finish_reason="stop",
                            prompt_tokens=len(prompt_ids))

    async def chat(self, messages: list[dict[str, Any]], **_: Any) -> PolicyOutput:
        """Message mode is not scripted."""
        raise AssertionError("token mode only")
