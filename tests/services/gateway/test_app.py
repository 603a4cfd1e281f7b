"""The mounted gateway end to end: real clients, the real local engine in-process, traces in Postgres.

The app (gateway + inference, as in the all-in-one app) runs under uvicorn on
loopback with its own database engine, so trace rows are committed for real.
Tests that need a known tool call swap in a SCRIPTED policy (fixed reply,
tokenised by the real tokenizer, served by the real engine path).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import create_async_engine

from services.app import create_service_app
from services.gateway.app import LOCAL_ENGINE, LOCAL_UPSTREAM_URL
from services.gateway.app import SERVICE as GATEWAY
from services.gateway.testing_upstream import Behaviour, ServerThread, make_upstream_app
from services.inference.app import SERVICE as INFERENCE
from services.inference.chat import render_chat
from services.inference.config import engine_config
from services.inference.engine import Engine
from services.inference.loader import LoadedModel, load_model, resolve_source
from services.inference.scripted import scripted_model
from services.inference.service import EngineHolder, get_engine_holder
from shared.auth import create_key
from shared.client import AsyncClient as TrajforgeClient
from shared.db.models import GatewayTraceRow
from shared.db.session import make_sessionmaker
from shared.schema import Message, ToolInfo
from shared.settings import Settings
from shared.web import create_app
from shared.web.inproc import in_process_apps, offer_in_process
from tests.conftest import LoopbackServer

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
SCRIPT = 'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


@pytest.fixture(scope="module")
def loaded() -> LoadedModel:
    return load_model(resolve_source(""), cache_dir=engine_config().cache_dir)


@pytest.fixture(scope="module")
def engines(loaded: LoadedModel) -> Iterator[dict[str, EngineHolder]]:
    """The real model and a SCRIPTED policy under the same served name."""
    real = Engine(loaded.model, loaded.tokenizer, name=loaded.name, max_batch_size=4)
    scripted = Engine(scripted_model(loaded.tokenizer, SCRIPT), loaded.tokenizer, name=loaded.name)
    yield {"real": EngineHolder(engine=real), "scripted": EngineHolder(engine=scripted)}
    real.close()
    scripted.close()


class Served:
    """A loopback app, its key, and which engine answers."""

    def __init__(self, server: LoopbackServer, key: str, holders: dict[str, EngineHolder]) -> None:
        self.server, self.key, self.holders = server, key, holders
        self.active = "real"
        self.url = server.url

    def openai(self, base: str = "/v1") -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url + base, api_key=self.key, max_retries=0, timeout=120)

    def aopenai(self, base: str = "/v1") -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(base_url=self.url + base, api_key=self.key, max_retries=0, timeout=120)

    def http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"authorization": f"Bearer {self.key}"}, timeout=120)


async def _committed_key(settings: Settings) -> str:
    engine = create_async_engine(settings.effective_database_url)
    try:
        async with make_sessionmaker(engine)() as session:
            _, key = await create_key(session, "gateway-e2e", salt=settings.key_salt, scope="admin")
            await session.commit()
        return key
    finally:
        await engine.dispose()


@pytest.fixture
async def serve(settings: Settings, engines: dict[str, EngineHolder]) -> AsyncIterator[Any]:
    """Factory: serve gateway + inference (prefixed, as all-in-one) with settings overrides."""
    stack: list[LoopbackServer] = []
    key = await _committed_key(settings)

    def make(**overrides: Any) -> Served:
        app = create_app([GATEWAY, INFERENCE], settings=settings.model_copy(update=overrides))
        server = LoopbackServer(app)
        served = Served(server, key, engines)
        app.dependency_overrides[get_engine_holder] = lambda: engines[served.active]
        stack.append(server.__enter__())
        return served

    yield make
    for server in stack:
        server.__exit__(None)


async def _rows(settings: Settings, session_id: str, count: int = 1) -> list[GatewayTraceRow]:
    """The session's trace rows, waiting (up to 10 s) for ``count`` of them: the sink writes in the background."""
    engine = create_async_engine(settings.effective_database_url)
    deadline = time.monotonic() + 10
    try:
        while True:
            async with make_sessionmaker(engine)() as session:
                stmt = select(GatewayTraceRow).where(GatewayTraceRow.session_id == session_id)
                rows = list((await session.execute(stmt.order_by(GatewayTraceRow.seq))).scalars())
            if len(rows) >= count or time.monotonic() > deadline:
                return rows
            await asyncio.sleep(0.05)
    finally:
        await engine.dispose()


def _sid() -> str:
    return f"s-{uuid.uuid4().hex[:12]}"


async def test_models_lists_the_local_model_and_401_is_openai_shaped(serve: Any, loaded: LoadedModel) -> None:
    served = serve()
    models = served.openai().models.list()
    assert [m.id for m in models.data] == [loaded.name]
    async with httpx.AsyncClient(base_url=served.url) as anon:
        resp = await anon.post("/v1/chat/completions", json={"model": loaded.name, "messages": []})
    assert resp.status_code == 401 and resp.json()["error"]["type"] == "authentication_error"
    async with served.http() as http:
        health = (await http.get("/inference/health")).json()
    assert health["status"] == "ok"


async def test_openai_sync_and_async_reach_the_real_engine_and_traces_land_in_postgres(
    serve: Any, settings: Settings, loaded: LoadedModel
) -> None:
    served, sid = serve(), _sid()
    messages = [{"role": "user", "content": "Say hi."}]
    reply = served.openai(f"/sessions/{sid}/v1").chat.completions.create(
        model=loaded.name, messages=messages, max_tokens=4, temperature=0)  # type: ignore[arg-type]
    again = await served.aopenai(f"/sessions/{sid}/v1").chat.completions.create(
        model=loaded.name, messages=messages, max_tokens=4, temperature=0)  # type: ignore[arg-type]
    assert reply.choices[0].message.content == again.choices[0].message.content  # greedy twice
    rows = await _rows(settings, sid, 2)
    assert [r.seq for r in rows] == [0, 1] and {r.status for r in rows} == {"ok"}
    assert rows[0].upstream == "local" and rows[0].completion_token_ids
    assert len(rows[0].logprobs or []) == len(rows[0].completion_token_ids or [])
    assert loaded.tokenizer.decode(rows[0].completion_token_ids, skip_special_tokens=True).startswith(
        reply.choices[0].message.content or "")
    async with TrajforgeClient(served.url, api_key=served.key) as tf:
        traces = await tf.session_traces(sid)
    assert [t["sequence"] for t in traces] == [0, 1] and traces[0]["prompt_token_ids"] == rows[0].prompt_token_ids


async def test_streaming_tool_call_deltas_from_the_scripted_policy(serve: Any, settings: Settings,
                                                                   loaded: LoadedModel) -> None:
    served, sid = serve(), _sid()
    served.active = "scripted"
    stream = served.openai(f"/sessions/{sid}/v1").chat.completions.create(
        model=loaded.name, messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER], stream=True, max_tokens=64)  # type: ignore[list-item]
    chunks = list(stream)
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert calls[0].function and calls[0].function.name == "get_weather"
    assert json.loads("".join(c.function.arguments or "" for c in calls if c.function)) == {"city": "Paris"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    (row,) = await _rows(settings, sid)
    assert row.stream and row.status == "ok" and row.parse_statuses == ["ok"]
    assert loaded.tokenizer.decode(row.completion_token_ids, skip_special_tokens=True) == SCRIPT


async def test_langchain_bind_tools_through_the_gateway(serve: Any, loaded: LoadedModel) -> None:
    served, sid = serve(), _sid()
    served.active = "scripted"

    @tool
    def get_weather(city: str) -> str:
        """Weather for a city."""
        return "sunny"

    llm = ChatOpenAI(base_url=f"{served.url}/sessions/{sid}/v1", api_key=served.key,  # type: ignore[arg-type]
                     model=loaded.name, max_retries=0, max_tokens=64)  # type: ignore[call-arg]
    message = await llm.bind_tools([get_weather]).ainvoke("Weather in Paris?")
    assert message.tool_calls[0]["name"] == "get_weather" and message.tool_calls[0]["args"] == {"city": "Paris"}


def _tool_turns(client: openai.OpenAI, model: str, *, edit_turn: int | None = None) -> list[dict[str, Any]]:
    """Three tool-using turns; the history is what the client got back (edited once if asked)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
    for turn in range(3):
        reply = client.chat.completions.create(model=model, messages=messages, tools=[WEATHER],  # type: ignore[arg-type,list-item]
                                               max_tokens=64)
        said = reply.choices[0].message.model_dump(exclude_none=True, include={"role", "content", "tool_calls"})
        if turn == edit_turn:
            said["content"] = "Let me check."  # the client rewrites history: the prefix breaks
        messages.append(said)
        for call in reply.choices[0].message.tool_calls or []:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": f"sunny ({turn})"})
    return messages


async def test_three_turn_tool_session_merges_token_exact(serve: Any, loaded: LoadedModel) -> None:
    served, sid = serve(), _sid()
    served.active = "scripted"
    messages = _tool_turns(served.openai(f"/sessions/{sid}/v1"), loaded.name)
    async with TrajforgeClient(served.url, api_key=served.key) as tf:
        merged = await tf.session_trajectory(sid)
    assert merged["calls"] == 3 and merged["joins"] == 2 and merged["mismatches"] == []
    (segment,) = merged["segments"]
    token = segment["tokens"]
    ids = token["prompt_ids"] + token["response_ids"]
    history = [Message.model_validate(m) for m in messages[:-1]]  # up to the last assistant reply
    rendered = render_chat(loaded.tokenizer, history, tools=[ToolInfo.model_validate(WEATHER)],
                           add_generation_prompt=False)
    assert loaded.tokenizer.decode(ids) == loaded.tokenizer.decode(rendered).rstrip("\n")
    sampled = [i for i, m in zip(token["response_ids"], token["loss_mask"], strict=True) if m == 1]
    assert loaded.tokenizer.decode(sampled, skip_special_tokens=True).count("<tool_call>") == 3


async def test_prefix_mismatch_is_detected_and_counted(serve: Any, loaded: LoadedModel) -> None:
    served, sid = serve(), _sid()
    served.active = "scripted"
    _tool_turns(served.openai(f"/sessions/{sid}/v1"), loaded.name, edit_turn=0)
    async with TrajforgeClient(served.url, api_key=served.key) as tf:
        merged = await tf.session_trajectory(sid)
    assert len(merged["segments"]) == 2 and len(merged["mismatches"]) == 1
    async with served.http() as http:
        metrics = (await http.get("/metrics")).text
    assert "trajforge_gateway_prefix_mismatches_total" in metrics


def _config_file(tmp_path: Path, **config: Any) -> str:
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(config))
    return str(path)


async def test_bad_input_gets_openai_errors_with_the_right_status(serve: Any, loaded: LoadedModel) -> None:
    served = serve(max_request_bytes=4096)
    tool_msg = {"role": "tool", "content": "sunny"}
    cases: list[tuple[Any, int]] = [
        (b"{not json", 400),
        ({"model": "nope", "messages": [{"role": "user", "content": "x"}]}, 404),
        ({"model": loaded.name, "messages": [{"role": "user", "content": "x"}, {**tool_msg, "tool_call_id": "c1"}]},
         400),
        ({"model": loaded.name, "messages": [{"role": "user", "content": "x"}, tool_msg]}, 400),
        ({"model": loaded.name, "messages": [{"role": "user", "content": "x" * 8000}]}, 413),
    ]
    async with served.http() as http:
        for body, status in cases:
            kwargs = {"content": body} if isinstance(body, bytes) else {"json": body}
            resp = await http.post("/v1/chat/completions", **kwargs)
            assert resp.status_code == status, (body, resp.text)
            assert set(resp.json()["error"]) >= {"message", "type", "code"}


async def test_rate_limit_upstream_down_and_drain(serve: Any, tmp_path: Path, settings: Settings) -> None:
    config = _config_file(tmp_path, upstreams=[{"model": "gone", "url": "http://127.0.0.1:9", "name": "gone"}],
                          retry={"max_attempts": 1}, rate_limit={"rate_per_s": 0.001, "burst": 3})
    served, sid = serve(gateway_config=config), _sid()
    body = {"model": "gone", "messages": [{"role": "user", "content": "x"}]}
    async with served.http() as http:
        down = await http.post(f"/sessions/{sid}/v1/chat/completions", json=body)
        assert down.status_code in (502, 503) and down.json()["error"]["message"]
        assert (await http.post("/v1/gateway/drain", json={})).json()["draining"] is True
        drained = await http.post("/v1/chat/completions", json=body)
        assert drained.status_code == 503 and "retry-after" in drained.headers
        assert (await http.post("/v1/gateway/resume")).json()["draining"] is False
        await http.post(f"/sessions/{sid}/v1/chat/completions", json=body)
        limited = await http.post("/v1/chat/completions", json=body)
        assert limited.status_code == 429 and limited.json()["error"]["code"]
    rows = await _rows(settings, sid, 2)
    assert [r.status for r in rows] == ["error", "error"] and rows[0].error_code and rows[0].upstream == "gone"


async def test_trace_row_is_written_when_the_upstream_dies_mid_stream(
    serve: Any, tmp_path: Path, settings: Settings
) -> None:
    upstream = ServerThread(make_upstream_app("dying")).start()
    try:
        upstream.app.state.upstream.script.append(Behaviour(content="a b c d e f", die_after_chunks=2))
        config = _config_file(tmp_path, upstreams=[{"model": "policy", "url": upstream.url, "name": "dying"}],
                              retry={"max_attempts": 1})
        served, sid = serve(gateway_config=config), _sid()
        body = {"model": "policy", "messages": [{"role": "user", "content": "x"}], "stream": True}
        async with served.http() as http, http.stream(
                "POST", f"/sessions/{sid}/v1/chat/completions", json=body) as resp:
            lines = [line async for line in resp.aiter_lines() if line.startswith("data: ")]
        assert resp.status_code == 200 and any('"upstream_error"' in line for line in lines), lines
    finally:
        upstream.stop()
    (row,) = await _rows(settings, sid)
    assert row.status == "error" and row.stream and row.error_code


# ------------------------------------------------- the embedded upstream: an app offered in process


@contextlib.asynccontextmanager
async def _started(app: Any, api_key: str) -> AsyncIterator[httpx.AsyncClient]:
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test",
            headers={"authorization": f"Bearer {api_key}"}) as client:
        yield client


async def test_the_embedded_upstream_is_the_engine_app_offered_on_the_gateways_app(
    settings: Settings, connection: Any, sessionmaker: Any, api_key: str
) -> None:
    app = create_app(GATEWAY, settings=settings, engine=connection.engine, sessionmaker=sessionmaker)
    stand_in = make_upstream_app("offered")
    stand_in.add_api_route("/served_model", lambda: {"model": "policy"})  # what the gateway asks at startup
    offer_in_process(app, {LOCAL_ENGINE: lambda host: stand_in})
    async with _started(app, api_key) as client:
        assert [u.url for u in app.state.gateway.pool.config.upstreams] == [LOCAL_UPSTREAM_URL]
        resp = await client.post("/v1/chat/completions", json={"model": "policy", "messages": [
            {"role": "user", "content": "x"}]})
    assert resp.status_code == 200, resp.text
    assert [r["path"] for r in stand_in.state.upstream.requests] == ["/v1/chat/completions"]


async def test_a_gateway_alone_has_no_engine_unless_composed_with_one(
    settings: Settings, connection: Any, sessionmaker: Any, api_key: str, capfd: pytest.CaptureFixture[str]
) -> None:
    alone = create_app(GATEWAY, settings=settings, engine=connection.engine, sessionmaker=sessionmaker)
    async with _started(alone, api_key):
        assert alone.state.gateway.pool.config.upstreams == []
    assert "the gateway has no upstream: set TRAJFORGE_INFERENCE_URL" in capfd.readouterr().err  # the JSON log
    composed = create_service_app("gateway", settings=settings, engine=connection.engine,
                                  sessionmaker=sessionmaker)  # as `trajforge serve gateway` builds it
    assert set(in_process_apps(composed)) == {LOCAL_ENGINE}
    async with _started(composed, api_key):
        [upstream] = composed.state.gateway.pool.config.upstreams
    assert upstream.url == LOCAL_UPSTREAM_URL and upstream.model == resolve_source("").name


async def test_without_a_local_model_the_gateway_starts_with_no_upstream_and_says_why(
    settings: Settings, connection: Any, sessionmaker: Any, api_key: str, tmp_path: Path,
    capfd: pytest.CaptureFixture[str]
) -> None:
    app = create_app([GATEWAY, INFERENCE], settings=settings, engine=connection.engine, sessionmaker=sessionmaker)
    missing = EngineHolder(engine_config().model_copy(update={"local_model": str(tmp_path / "missing.gguf")}))
    app.dependency_overrides[get_engine_holder] = lambda: missing
    async with _started(app, api_key):
        assert app.state.gateway.pool.config.upstreams == []
    assert "no local model for the embedded gateway upstream" in capfd.readouterr().err
