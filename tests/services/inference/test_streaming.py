"""SSE streams: text completions, n > 1 chat with logprobs, held-back tool markup, client errors."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
import torch
from fastapi import FastAPI

from services.inference.engine import Engine
from services.inference.errors import GenerationAborted
from services.inference.params import GenParams
from services.inference.routes import router
from services.inference.service import EngineHolder, get_engine_holder
from services.inference.streaming import _visible, sse
from tests.services.inference.conftest import chat_body


async def _events(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    async with client.stream("POST", path, json=body) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        lines = [line async for line in resp.aiter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    return [json.loads(line[6:]) for line in lines[:-1]]


def test_sse_framing_and_tool_markup_hold_back() -> None:
    assert sse({"a": 1}) == 'data: {"a":1}\n\n' and sse("[DONE]") == "data: [DONE]\n\n"
    assert _visible("Sure <tool_call>{", tools_on=True) == "Sure "
    assert _visible("Sure <tool_", tools_on=True) == "Sure "  # may become a call: hold it back
    assert _visible("Sure <tool_", tools_on=False) == "Sure <tool_"


async def test_completion_stream_matches_the_non_streamed_answer(client: httpx.AsyncClient) -> None:
    body = {"prompt": "Once upon a time", "max_tokens": 6, "temperature": 0, "return_token_ids": True,
            "logprobs": 0, "stream_options": {"include_usage": True}}
    whole = (await client.post("/v1/completions", json=body)).json()["choices"][0]
    events = await _events(client, "/v1/completions", {**body, "stream": True})
    assert events[0]["prompt_token_ids"] and events[-1]["usage"]["completion_tokens"] == 6
    choices = [c for e in events for c in e["choices"]]
    assert "".join(c["text"] for c in choices) == whole["text"]
    assert [t for c in choices for t in c["token_ids"]] == whole["token_ids"]
    assert [lp for c in choices for lp in c["logprobs"]["token_logprobs"]] == \
        pytest.approx(whole["logprobs"]["token_logprobs"])
    assert choices[-1]["finish_reason"] == "length"


async def test_chat_stream_with_n_and_logprobs(client: httpx.AsyncClient) -> None:
    body = chat_body(n=2, seed=5, max_tokens=5, logprobs=True, stream=True, return_tokens_as_token_ids=True)
    events = await _events(client, "/v1/chat/completions", body)
    by_index: dict[int, list[dict[str, Any]]] = {0: [], 1: []}
    for event in events:
        for choice in event["choices"]:
            by_index[choice["index"]].append(choice)
    for choices in by_index.values():
        assert choices[0]["delta"]["role"] == "assistant" and choices[-1]["finish_reason"] in {"stop", "length"}
        tokens = [e["token"] for c in choices if c.get("logprobs") for e in c["logprobs"]["content"]]
        assert tokens and all(t.startswith("token_id:") for t in tokens)


async def test_stream_refuses_bad_requests_before_streaming(server_url: str, local_engine: Engine) -> None:
    client = openai.AsyncOpenAI(base_url=f"{server_url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.NotFoundError):
        await client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}],
                                             stream=True)
    with pytest.raises(openai.BadRequestError):
        await client.completions.create(model=local_engine.name, prompt=["a", "b"], stream=True, max_tokens=2)
    await client.close()


async def test_stream_of_several_prompts_is_refused(client: httpx.AsyncClient, local_engine: Engine) -> None:
    resp = await client.post("/v1/completions", json={"prompt": ["a", "b"], "stream": True, "model": local_engine.name})
    assert resp.status_code == 400 and resp.json()["error"]["param"] == "prompt"


class _FailingModel(torch.nn.Module):
    """A model whose forward pass fails: a fault the real model cannot be made to produce."""

    def __init__(self, real: Any) -> None:
        super().__init__()
        self.config, self.generation_config = real.config, real.generation_config

    def forward(self, input_ids: Any, attention_mask: Any = None, position_ids: Any = None, cache: Any = None,
                use_cache: bool = True) -> Any:
        """Fail as a lost device would."""
        raise RuntimeError("device lost")


async def test_failure_after_the_200_is_an_error_event(local_engine: Engine) -> None:
    failing = Engine(_FailingModel(local_engine.model), local_engine.tokenizer, name="failing")
    app = FastAPI()
    app.include_router(router)
    holder = EngineHolder(engine=failing)
    app.dependency_overrides[get_engine_holder] = lambda: holder
    async with (httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://failing") as client,
                client.stream("POST", "/v1/chat/completions", json=chat_body(stream=True)) as resp):
        assert resp.status_code == 200
        lines = [line async for line in resp.aiter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    error = json.loads(lines[-2][6:])["error"]
    assert error["code"] == "generation_aborted" and error["type"] == "server_error" and error["message"]
    with pytest.raises(GenerationAborted):  # the generation thread survived and still answers
        await failing.generate([1, 2, 3], GenParams(max_tokens=2))
    failing.close()
