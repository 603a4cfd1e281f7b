"""The OpenAI-subset routes over HTTP against the real model (and one scripted policy for tool calls)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import openai
import pytest
from fastapi import FastAPI

from services.inference.engine import Engine
from services.inference.routes import router
from services.inference.scripted import scripted_model
from services.inference.service import EngineHolder, get_engine_holder
from tests.services.inference.conftest import chat_body


async def test_chat_returns_token_ids_that_decode_to_the_text(client: httpx.AsyncClient, local_engine: Engine) -> None:
    resp = await client.post("/v1/chat/completions", json=chat_body(
        return_token_ids=True, logprobs=True, top_logprobs=2, temperature=0))
    assert resp.status_code == 200
    body = resp.json()
    choice = body["choices"][0]
    assert local_engine.decode(choice["token_ids"]) == choice["message"]["content"]
    tokenized = await client.post("/tokenize", json={"messages": chat_body()["messages"]})
    assert body["prompt_token_ids"] == tokenized.json()["tokens"]
    entries = choice["logprobs"]["content"]
    assert len(entries) == len(choice["token_ids"]) == body["usage"]["completion_tokens"]
    assert all(e["logprob"] <= 0 and len(e["top_logprobs"]) == 2 for e in entries)


async def test_chat_n_seed_and_stop(client: httpx.AsyncClient) -> None:
    body = chat_body(n=2, seed=3, temperature=1.0, max_tokens=6)
    first, second = [(await client.post("/v1/chat/completions", json=body)).json() for _ in range(2)]
    texts = [c["message"]["content"] for c in first["choices"]]
    assert len(texts) == 2 and texts == [c["message"]["content"] for c in second["choices"]]
    greedy = (await client.post("/v1/chat/completions", json=chat_body(temperature=0))).json()
    text = greedy["choices"][0]["message"]["content"]
    stopped = (await client.post("/v1/chat/completions", json=chat_body(temperature=0, stop=text[2:4]))).json()
    assert stopped["choices"][0]["message"]["content"] == text[: text.find(text[2:4])]
    assert stopped["choices"][0]["finish_reason"] == "stop"


async def test_completions_take_text_or_token_ids(client: httpx.AsyncClient, local_engine: Engine) -> None:
    ids = local_engine.encode("The capital of France is")
    by_text = (await client.post("/v1/completions", json={
        "prompt": "The capital of France is", "max_tokens": 5, "temperature": 0, "logprobs": 1,
        "return_token_ids": True})).json()
    by_ids = (await client.post("/v1/completions", json={"prompt": ids, "max_tokens": 5, "temperature": 0})).json()
    assert by_text["choices"][0]["text"] == by_ids["choices"][0]["text"]
    assert by_text["choices"][0]["prompt_token_ids"] == ids
    assert len(by_text["choices"][0]["logprobs"]["token_logprobs"]) == 5


async def test_tokenize_detokenize_round_trip(client: httpx.AsyncClient) -> None:
    text = "Token in, token out."
    tokens = (await client.post("/tokenize", json={"prompt": text})).json()["tokens"]
    assert (await client.post("/detokenize", json={"tokens": tokens})).json()["prompt"] == text


async def test_models_and_health(client: httpx.AsyncClient, local_engine: Engine) -> None:
    models = (await client.get("/v1/models")).json()
    assert [m["id"] for m in models["data"]] == [local_engine.name]
    health = (await client.get("/health")).json()
    assert health["status"] == "ok" and health["model"] == local_engine.name


@pytest.mark.parametrize(("body", "status", "code"), [
    (chat_body(model="no-such-model"), 404, "model_not_found"),
    ({"messages": []}, 400, None),
    (chat_body(max_tokens=10**6), 400, "context_length_exceeded"),
    (chat_body(temperature=-1), 400, None),
])
async def test_bad_requests_get_openai_errors(client: httpx.AsyncClient, body: dict, status: int,
                                              code: str | None) -> None:
    resp = await client.post("/v1/chat/completions", json=body)
    assert resp.status_code == status
    error = resp.json()["error"]
    assert error["message"] and (code is None or error["code"] == code)


async def test_detokenize_refuses_unknown_ids(client: httpx.AsyncClient) -> None:
    resp = await client.post("/detokenize", json={"tokens": [-1]})
    assert resp.status_code == 400 and resp.json()["error"]["param"] == "tokens"


async def test_openai_client_streams_text_and_token_ids(server_url: str, local_engine: Engine) -> None:
    client = openai.AsyncOpenAI(base_url=f"{server_url}/v1", api_key="unused")
    stream = await client.chat.completions.create(
        model=local_engine.name, messages=[{"role": "user", "content": "Say hello."}], max_tokens=8, temperature=0,
        stream=True, stream_options={"include_usage": True}, extra_body={"return_token_ids": True})
    pieces, ids, usage = [], [], None
    async for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            pieces.append(choice.delta.content or "")
            ids.extend((choice.model_extra or {}).get("token_ids") or [])
    await client.close()
    assert "".join(pieces) == local_engine.decode(ids) and ids
    assert usage is not None and usage.completion_tokens == len(ids)


_TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
_SCRIPT = 'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


@pytest.fixture
async def scripted_client(local_engine: Engine) -> AsyncIterator[httpx.AsyncClient]:
    """Routes over a SCRIPTED policy (fixed reply, real tokenizer, real engine path)."""
    policy = Engine(scripted_model(local_engine.tokenizer, _SCRIPT), local_engine.tokenizer, name="scripted")
    app = FastAPI()
    app.include_router(router)
    holder = EngineHolder(engine=policy)
    app.dependency_overrides[get_engine_holder] = lambda: holder
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://scripted") as c:
        yield c
    policy.close()


async def test_scripted_tool_call_is_parsed(scripted_client: httpx.AsyncClient) -> None:
    resp = await scripted_client.post("/v1/chat/completions", json=chat_body(tools=[_TOOL], max_tokens=64))
    choice = resp.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] == "Checking."
    [call] = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}


async def test_scripted_tool_call_streams_as_deltas(scripted_client: httpx.AsyncClient) -> None:
    body = chat_body(tools=[_TOOL], max_tokens=64, stream=True)
    async with scripted_client.stream("POST", "/v1/chat/completions", json=body) as resp:
        lines = [line async for line in resp.aiter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[6:]) for line in lines[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    content = "".join(d.get("content") or "" for d in deltas)
    calls = [tc for d in deltas for tc in d.get("tool_calls") or []]
    assert "<tool_call>" not in content and content.strip() == "Checking."
    assert calls[0]["function"]["name"] == "get_weather" and calls[0]["id"]
    assert json.loads("".join(c["function"]["arguments"] for c in calls)) == {"city": "Paris"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


async def test_pause_and_resume_under_vllm_and_sglang_names(client: httpx.AsyncClient) -> None:
    for pause, resume in (("/pause", "/resume"), ("/pause_generation", "/continue_generation")):
        assert (await client.post(pause)).json() == {"paused": True}
        assert (await client.get("/is_paused")).json() == {"is_paused": True}
        assert (await client.post(resume)).json() == {"paused": False}
    assert (await client.get("/is_paused")).json() == {"is_paused": False}
