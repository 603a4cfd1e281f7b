"""InProcessClient: ASGI apps reached in memory, streamed by line, failures mapped to transport kinds."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from fastapi import FastAPI, Request
from starlette.responses import StreamingResponse

from services.gateway.http1 import ConnectFailed, ProtocolFailure
from services.gateway.inproc import InProcessClient


def _app() -> FastAPI:
    app = FastAPI()

    @app.post("/echo")
    async def echo(request: Request) -> dict[str, object]:
        return {"body": (await request.body()).decode(), "auth": request.headers.get("authorization")}

    async def lines(die: bool) -> AsyncIterator[bytes]:
        yield b"data: 1\n\n"
        if die:
            raise ConnectionAbortedError("died mid-stream")
        yield b"data: 2\n\n"

    @app.post("/sse")
    async def sse(die: bool = False) -> StreamingResponse:
        return StreamingResponse(lines(die), media_type="text/event-stream")

    return app


@pytest.fixture
def client() -> InProcessClient:
    return InProcessClient({"engine": _app()})


async def test_whole_body_and_headers_reach_the_app(client: InProcessClient) -> None:
    resp = await client.request("POST", "inproc://engine/echo", body=b"hi", headers={"authorization": "Bearer x"})
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    assert resp.content == b'{"body":"hi","auth":"Bearer x"}'


async def test_stream_is_read_line_by_line(client: InProcessClient) -> None:
    resp = await client.request("POST", "inproc://engine/sse", stream=True)
    assert [line async for line in resp.aiter_lines() if line] == ["data: 1", "data: 2"]
    await resp.aclose()


async def test_failures_map_to_transport_kinds(client: InProcessClient) -> None:
    with pytest.raises(ConnectFailed):
        await client.request("POST", "inproc://nobody/echo")
    resp = await client.request("POST", "inproc://engine/sse?die=true", stream=True)
    with pytest.raises(ProtocolFailure):
        _ = [line async for line in resp.aiter_lines()]
    await resp.aclose()


async def test_other_urls_go_over_the_network(client: InProcessClient) -> None:
    with pytest.raises(ConnectFailed):
        await client.request("POST", "http://127.0.0.1:9/x", connect_timeout_s=1)
    await client.aclose()
