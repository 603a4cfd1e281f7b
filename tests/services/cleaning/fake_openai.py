"""A tiny OpenAI-shaped server on loopback for testing model-backed cleaning steps.

Completions echo prompt logprobs from a simple rule (a word already seen earlier in the
prompt is likely, a new word is not), so conditional scoring is really computed. Chat
answers are scripted: a judge request gets a verdict, a label request gets a label,
anything else gets the last user text back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import FastAPI, Request

from tests.conftest import LoopbackServer

_WORD = re.compile(r"\S+\s*")


def echo_logprobs(prompt: str) -> dict[str, Any]:
    """OpenAI legacy logprobs for a prompt: tokens, token_logprobs, text_offset."""
    tokens, lps, offs, seen = [], [], [], set()
    for m in _WORD.finditer(prompt):
        word = m.group(0).strip().lower()
        tokens.append(m.group(0))
        lps.append(None if not tokens[:-1] else (-0.2 if word in seen else -4.0))
        offs.append(m.start())
        seen.add(word)
    return {"tokens": tokens, "token_logprobs": lps, "text_offset": offs}


def _chat_reply(body: dict[str, Any]) -> str:
    msgs = body.get("messages") or []
    last = str(msgs[-1].get("content", "")) if msgs else ""
    if "## Model answer" in last:
        ref = last.split("## Reference answer\n", 1)[1].split("\n\n## Model answer", 1)[0]
        model = last.split("## Model answer\n", 1)[1]
        return f"Compared. <verdict>{'PASS' if ref.strip() in model else 'FAIL'}</verdict>"
    if last.startswith("Label the intent"):
        return "math" if "integral" in last else "other"
    return last


def make_app() -> FastAPI:
    """The fake server's FastAPI app."""
    app = FastAPI()

    @app.post("/v1/completions")
    async def completions(request: Request) -> dict[str, Any]:
        body = await request.json()
        return {"object": "text_completion", "model": body.get("model"),
                "choices": [{"index": 0, "text": "", "logprobs": echo_logprobs(body["prompt"])}]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> dict[str, Any]:
        body = await request.json()
        if request.headers.get("authorization") != "Bearer test-key":
            return {"choices": []}
        text = _chat_reply(body)
        return {"object": "chat.completion", "model": body.get("model"), "choices": [
            {"index": i, "message": {"role": "assistant", "content": text}} for i in range(body.get("n", 1))]}

    return app


@contextmanager
def serve() -> Iterator[str]:
    """Run the fake server on a free loopback port; yields its base URL."""
    with LoopbackServer(make_app()) as server:
        yield server.url
