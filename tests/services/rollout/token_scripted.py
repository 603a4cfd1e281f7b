"""A SCRIPTED token-mode policy for rollout tests against remote services, registered as ``scripted_tokens``.

Fixed replies chosen from the decoded prompt (its last user turn and how many assistant turns it
holds), tokenised by the real SmolLM2 tokenizer, with the end-of-turn token appended; labelled
scripted because the real model is too small to produce known tool calls. ``policy.backend.model``
is ``<script>[,delay=<seconds>]``. Every call is kept (prompt ids, sampled ids) for token checks.

``scripted_upstream`` serves the same scripts as an OpenAI ``/v1/completions`` upstream (token ids
in, token ids and logprobs out, the way vLLM answers), one model per script, so a gateway can
carry a job's policy calls to them; ``assert_token_exact`` checks a stored trajectory against calls.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from fastapi import FastAPI, Request

from services.rollout.bridge import TokenBridge
from services.rollout.ports import PolicyOutput
from shared.schema import SamplingParams

__all__ = ["SCRIPTS", "TokenScripted", "assert_token_exact", "scripted_upstream"]

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


def scripted_upstream(tokenizer: Any) -> tuple[FastAPI, dict[str, TokenScripted]]:
    """An OpenAI completions upstream serving each script as a model; the policies keep their calls."""
    policies = {name: TokenScripted(tokenizer, name) for name in SCRIPTS}
    app = FastAPI()

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": name, "object": "model"} for name in policies]}

    @app.post("/v1/completions")
    async def complete(request: Request) -> dict[str, Any]:
        body = json.loads(await request.body())
        prompt = [int(t) for t in body["prompt"]]
        out = await policies[body["model"]].generate(prompt, sampling=SamplingParams())
        choice = {"index": 0, "text": out.text, "finish_reason": out.finish_reason, "token_ids": out.token_ids,
                  "prompt_token_ids": prompt,
                  "logprobs": {"tokens": [f"token_id:{t}" for t in out.token_ids], "token_logprobs": out.logprobs}}
        usage = {"prompt_tokens": len(prompt), "completion_tokens": len(out.token_ids),
                 "total_tokens": len(prompt) + len(out.token_ids)}
        return {"id": f"cmpl-{len(policies[body['model']].calls)}", "object": "text_completion",
                "model": body["model"], "choices": [choice], "usage": usage}

    return app, policies


def assert_token_exact(prompt_ids: list[int], response_ids: list[int], loss_mask: list[int], *, turns: int,
                       calls: list[tuple[list[int], list[int]]]) -> None:
    """Every turn's prompt is a prefix of the stored ids and its sample follows it, verbatim under loss_mask 1."""
    ids = list(prompt_ids) + list(response_ids)
    sampled = [t for t, m in zip(response_ids, loss_mask, strict=True) if m]
    unique = {(tuple(p), tuple(o)) for p, o in calls}  # group members (and jobs) repeat the same calls
    mine = [(p, o) for p, o in unique if list(ids[:len(p)]) == list(p) and list(ids[len(p):len(p) + len(o)]) == list(o)]
    assert len(mine) == turns, "every turn's prompt is a prefix of the stored ids, its sample follows it"
    assert sampled == [t for _, o in sorted(mine, key=lambda c: len(c[0])) for t in o]
    assert list(prompt_ids) == min((list(p) for p, _ in mine), key=len)  # the first prompt, as the policy saw it
