"""The service clients over both transports: the service's app in-process, and a real server on loopback.

Each check runs the same client code twice, once per transport, and compares what comes back.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from services.app import create_all_in_one_app, service_spec
from shared.auth import create_key
from shared.clients import APPS, Endpoints, EnvsClient, RewardClient, ToolsClient
from shared.db.models import ApiKeyRow
from shared.errors import ClientError, EnvError, NotFound, UpstreamUnavailable
from shared.settings import Settings
from shared.web import create_app
from tests.conftest import LoopbackServer, free_port

CALLS = [
    {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": '{"expression": "2+3*4"}'}},
    {"id": "c2", "type": "function", "function": {"name": "no_such_tool", "arguments": "{}"}},
]


@pytest.fixture
async def live_key(engine: AsyncEngine, settings: Settings) -> AsyncIterator[str]:
    """A key committed to the run's database (servers on loopback have their own connections)."""
    maker = async_sessionmaker(engine, expire_on_commit=False)
    async with maker() as session:
        row, key = await create_key(session, f"clients-{uuid.uuid4().hex[:6]}", salt=settings.key_salt)
        await session.commit()
    yield key
    async with maker() as session:
        await session.execute(delete(ApiKeyRow).where(ApiKeyRow.id == row.id))
        await session.commit()


def _served(service: str, settings: Settings) -> LoopbackServer:
    return LoopbackServer(create_app(service_spec(service), settings=settings))


async def _batch(settings: Settings, key: str, engine: Any = None, maker: Any = None) -> list[tuple[str, str, str]]:
    async with (Endpoints(settings, engine=engine, sessionmaker=maker) as endpoints,
          await ToolsClient.open(endpoints, api_key=key) as tools):
        names = [t.function.name for t in await tools.list_tools()]
        assert {"calculator", "python", "bash"} <= set(names)
        out = await tools.call_batch(CALLS)
        return [(o.status, o.error_kind or "", o.content) for o in out]


async def test_tools_client_gives_the_same_answers_in_process_and_over_loopback(
        settings: Settings, engine: AsyncEngine, live_key: str) -> None:
    in_process = await _batch(settings, live_key, engine)
    with _served("tools", settings) as server:
        split = settings.model_copy(update={"tools_url": server.url})
        over_http = await _batch(split, live_key)
    assert in_process == over_http
    assert in_process[0][:2] == ("ok", "") and in_process[0][2].strip() == "14"
    assert in_process[1][0] == "error" and in_process[1][1] == "unknown_tool"


async def _episode(client: EnvsClient) -> list[Any]:
    session = client.session("counter")
    try:
        first = await session.reset({"start": 5})
        step = await session.step({"tool_name": "add", "arguments": {"delta": 3}})
        plain = await session.step({"delta": 2})  # the env's default tool takes bare fields
        state = await session.state()
    finally:
        await session.aclose()
    return [first.observation, step.observation, step.reward, plain.observation, state["step_count"]]


async def test_envs_sessions_match_in_process_and_over_websocket(
        settings: Settings, engine: AsyncEngine, live_key: str) -> None:
    async with (Endpoints(settings, engine=engine) as endpoints,
          await EnvsClient.open(endpoints, api_key=live_key) as envs):
        assert envs.endpoint.in_process
        in_process = await _episode(envs)
        schema = await envs.schema("counter")
    with _served("envs", settings) as server:
        async with (Endpoints(settings.model_copy(update={"envs_url": server.url})) as endpoints,
              await EnvsClient.open(endpoints, api_key=live_key) as envs):
            assert not envs.endpoint.in_process
            over_ws = await _episode(envs)
    assert in_process == over_ws
    assert in_process[1]["value"] == 8 and in_process[2] == 3.0 and in_process[3]["value"] == 10
    assert [t["function"]["name"] for t in schema["tools"]] == ["add", "echo"]


async def test_an_in_process_websocket_without_a_key_is_refused(settings: Settings, engine: AsyncEngine) -> None:
    async with (Endpoints(settings, engine=engine) as endpoints,
          await EnvsClient.open(endpoints, api_key="tf_not_a_key") as envs):
        session = envs.session("counter", connect_timeout_s=2)
        session.max_reconnects = 0
        with pytest.raises(UpstreamUnavailable, match="refused"):
            await session.reset()


async def test_env_error_frames_become_env_errors(settings: Settings, engine: AsyncEngine, live_key: str) -> None:
    async with (Endpoints(settings, engine=engine) as endpoints,
          await EnvsClient.open(endpoints, api_key=live_key) as envs):
        session = envs.session("counter")
        await session.reset()
        with pytest.raises(EnvError):
            await session.step({"tool_name": 12})
        # an error frame keeps the session: the next step is answered, in order
        assert (await session.step({"delta": 1})).observation["value"] == 1
        await session.aclose()


async def test_a_service_that_is_down_is_upstream_unavailable_within_the_attempts(settings: Settings) -> None:
    down = settings.model_copy(update={"tools_url": f"http://127.0.0.1:{free_port()}", "client_attempts": 3})
    started = time.monotonic()
    async with (Endpoints(down) as endpoints,
          await ToolsClient.open(endpoints, api_key="x") as tools):
        with pytest.raises(UpstreamUnavailable, match="unreachable"):
            await tools.list_tools()
    assert time.monotonic() - started < 5  # backoff 0.2 s + 0.4 s, never a hang


async def test_server_errors_keep_their_class(settings: Settings, engine: AsyncEngine,
                                              sessionmaker: async_sessionmaker[AsyncSession], api_key: str) -> None:
    async with (Endpoints(settings, engine=engine, sessionmaker=sessionmaker) as endpoints,
          await RewardClient.open(endpoints, api_key=api_key) as reward):
        with pytest.raises(ClientError) as caught:
            await reward.score([], {"components": [{"name": "no_such_component"}]})
        assert caught.value.code == "unknown_reward_component" and "no_such_component" in caught.value.message
        async with await EnvsClient.open(endpoints, api_key=api_key) as envs:
            with pytest.raises(NotFound):
                await envs.schema("no_such_env")


async def test_the_all_in_one_app_is_the_in_process_endpoint_while_it_runs(
        settings: Settings, engine: AsyncEngine) -> None:
    app = create_all_in_one_app(settings)
    async with app.router.lifespan_context(app):
        endpoint = await Endpoints(settings).get("tools")
        assert endpoint.app is app
        inference = await Endpoints(settings).get("inference")
        assert inference.base_url.endswith("/inference")
    assert APPS.lookup("tools") is None
    await asyncio.sleep(0)


def _probe_app() -> Any:
    """A plain Starlette app that reports what it was sent (mounted under ``/pre``, as services are)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Mount, Route

    async def echo(request: Request) -> JSONResponse:
        return JSONResponse({"path": request.url.path, "seg": request.path_params["seg"],
                             "query": sorted(request.query_params.multi_items()), "body": await request.json(),
                             "auth": request.headers.get("authorization"), "type": request.headers["content-type"]})

    async def chunks() -> AsyncIterator[bytes]:
        for part in (b'{"parts": ', b"[1, 2, ", b"3]}"):
            await asyncio.sleep(0.01)  # the response listens for a disconnect meanwhile
            yield part

    async def stream(request: Request) -> StreamingResponse:
        return StreamingResponse(chunks(), media_type="application/json")

    async def conflict(request: Request) -> JSONResponse:
        return JSONResponse({"code": "not_found", "detail": "no such thing"}, status_code=404)

    async def boom(request: Request) -> JSONResponse:
        raise RuntimeError("the app broke")

    routes = [Route("/echo/{seg}", echo, methods=["POST"]), Route("/stream", stream), Route("/missing", conflict),
              Route("/boom", boom)]
    return Starlette(routes=[Mount("/pre", routes=routes)])


async def _probe(client: Any) -> list[Any]:
    from urllib.parse import quote

    echoed = await client.request("POST", f"/echo/{quote('a b~é', safe='')}", json={"x": [1, "é"]},
                                  params={"k": ["1", "2"], "flag": True})
    streamed = await client.request("GET", "/stream")
    with pytest.raises(NotFound, match="no such thing"):
        await client.request("GET", "/missing")
    return [echoed, streamed]


async def test_the_in_process_exchange_answers_as_the_network_does() -> None:
    from shared.clients import Endpoint
    from shared.clients.services import ServiceClient

    app = _probe_app()
    key = "tf_" + "p" * 30
    async with ServiceClient(Endpoint("probe", "http://probe.internal/pre", app), api_key=key) as client:
        assert client.asgi is not None and client.http is None
        in_process = await _probe(client)
        with pytest.raises(RuntimeError, match="the app broke"):  # an app's exception reaches the caller
            await client.request("GET", "/boom")
    with LoopbackServer(app) as server:
        async with ServiceClient(Endpoint("probe", server.url + "/pre"), api_key=key) as client:
            over_http = await _probe(client)
    assert in_process == over_http
    echoed, streamed = in_process
    assert echoed == {"path": "/pre/echo/a b~é", "seg": "a b~é", "query": [["flag", "true"], ["k", "1"], ["k", "2"]],
                      "body": {"x": [1, "é"]}, "auth": f"Bearer {key}", "type": "application/json"}
    assert streamed == {"parts": [1, 2, 3]}
