"""The served entry: one send per response, hot paths past the app's layers, everything else as before."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets
from fastapi import FastAPI, Request, WebSocket
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from shared.settings import Settings
from shared.web import ServiceSpec, create_app
from shared.web.direct import DirectEntry, direct_entry_of
from shared.web.server import CoalescingTransport
from tests.conftest import LoopbackServer


class _Recorder(asyncio.Transport):
    """A transport that keeps what it is asked to write (what reached the socket)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: Any) -> None:
        self.sent.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = self.closed = True

    def get_write_buffer_size(self) -> int:
        return 0


async def test_writes_of_one_loop_turn_leave_as_one_send() -> None:
    real = _Recorder()
    wrapped = CoalescingTransport(real, asyncio.get_running_loop())
    wrapped.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    wrapped.write(b"")
    wrapped.write(memoryview(b"ok"))
    assert real.sent == [] and wrapped.get_write_buffer_size() == 40
    await asyncio.sleep(0)
    assert real.sent == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"]
    # A stream's chunks, written in turns of their own, leave one by one.
    for chunk in (b"a", b"b"):
        wrapped.write(chunk)
        await asyncio.sleep(0)
    assert real.sent[1:] == [b"a", b"b"]


async def test_close_sends_what_is_queued_and_abort_drops_it() -> None:
    real = _Recorder()
    wrapped = CoalescingTransport(real, asyncio.get_running_loop())
    wrapped.write(b"last response")
    wrapped.close()
    assert real.sent == [b"last response"] and real.closed
    await asyncio.sleep(0)  # the scheduled flush finds nothing left
    assert real.sent == [b"last response"]
    other = _Recorder()
    dropped = CoalescingTransport(other, asyncio.get_running_loop())
    dropped.write(b"never sent")
    dropped.abort()
    await asyncio.sleep(0)
    assert other.sent == [] and other.aborted


class _HotEcho:
    """A hot-path middleware for the tests: answers POST /hot/... itself, hands on the rest."""

    answered = 0

    def __init__(self, app: Any, *, prefix: str = "") -> None:
        self.app = app
        self.prefix = prefix

    def wants(self, scope: Scope, app: Any) -> bool:
        return scope["type"] == "http" and scope["method"] == "POST" and scope["path"].startswith("/hot/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.wants(scope, scope["app"]):
            await self.app(scope, receive, send)
            return
        type(self).answered += 1
        message = await receive()
        if scope["path"] == "/hot/boom":
            raise RuntimeError("boom")
        await Response(b"hot:" + message["body"], media_type="text/plain")(scope, receive, send)


def _app(settings: Settings) -> FastAPI:
    app = create_app(ServiceSpec(name="served", middleware=[_HotEcho]), settings=settings)

    @app.middleware("http")
    async def mark(request: Request, call_next: Any) -> Any:  # only what passes the app's own stack has it
        response = await call_next(request)
        response.headers["x-through-app"] = "1"
        return response

    @app.post("/hot-not/{name}")
    async def routed(name: str) -> dict[str, str]:
        return {"routed": name}

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.send_text("hello " + await websocket.receive_text())
        await websocket.close()

    return app


@pytest.fixture
def served(settings: Settings) -> Iterator[tuple[str, FastAPI]]:
    """The app on a free loopback port with the services' server config (lifespan on)."""
    app = _app(settings.model_copy(update={"auth_enabled": False}))
    with LoopbackServer(app, services_config=True, log_level="warning") as server:
        yield server.url, app


def test_the_app_carries_its_direct_entry(settings: Settings) -> None:
    entry = direct_entry_of(_app(settings))
    assert isinstance(entry, DirectEntry) and [type(h) for h in entry.hot] == [_HotEcho]
    assert direct_entry_of(create_app(ServiceSpec(name="plain"), settings=settings)) is None


async def test_hot_calls_skip_the_app_stack_and_keep_the_request_middleware(served: tuple[str, FastAPI]) -> None:
    url, _ = served
    before = _HotEcho.answered
    async with httpx.AsyncClient(base_url=url) as client:
        hot = await client.post("/hot/x", content=b"ping", headers={"x-request-id": "rid-7"})
        routed = await client.post("/hot-not/y")
        missing = await client.get("/nowhere")
    assert (hot.status_code, hot.text) == (200, "hot:ping")
    assert hot.headers["x-request-id"] == "rid-7" and "x-through-app" not in hot.headers
    assert routed.json() == {"routed": "y"} and routed.headers["x-through-app"] == "1"
    assert missing.status_code == 404 and missing.headers["x-through-app"] == "1"
    assert _HotEcho.answered == before + 1


async def test_pipelined_hot_and_routed_calls_are_answered_in_order(served: tuple[str, FastAPI]) -> None:
    url, _ = served
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    requests = (b"POST /hot/a HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\n\r\n1"
                b"POST /hot-not/b HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n"
                b"POST /hot/c HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\nconnection: close\r\n\r\n3")
    writer.write(requests)
    raw = await asyncio.wait_for(reader.read(-1), 10)
    writer.close()
    bodies = [part.split(b"\r\n\r\n", 1)[1] for part in raw.split(b"HTTP/1.1 200 OK")[1:]]
    assert [b[:len(b"hot:1")] if b.startswith(b"hot") else b for b in bodies] == [b"hot:1", b'{"routed":"b"}', b"hot:3"]


async def test_an_unexpected_error_on_a_hot_path_is_a_500_and_the_server_goes_on(
    served: tuple[str, FastAPI],
) -> None:
    url, _ = served
    async with httpx.AsyncClient(base_url=url) as client:
        failed = await client.post("/hot/boom", content=b"x")
        after = await client.post("/hot/ok", content=b"y")
    assert failed.status_code == 500 and failed.json()["code"] == "internal_error"  # the one error format
    assert failed.headers["x-request-id"] and after.text == "hot:y"


async def test_an_answered_hot_path_error_keeps_the_connection_open(served: tuple[str, FastAPI]) -> None:
    # Re-raised to uvicorn, the error closed the connection under a client already sending its next request.
    url, _ = served
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(b"POST /hot/boom HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\n\r\nx")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
        await reader.readexactly(length)
        assert head.startswith(b"HTTP/1.1 500") and b"connection: close" not in head.lower()
        writer.write(b"POST /hot/ok HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\nconnection: close\r\n\r\ny")
        rest = await asyncio.wait_for(reader.read(-1), 10)
    finally:
        writer.close()
    assert rest.startswith(b"HTTP/1.1 200") and rest.endswith(b"hot:y")


async def test_websocket_upgrades_get_the_real_transport(served: tuple[str, FastAPI]) -> None:
    url, _ = served
    async with websockets.connect(url.replace("http", "ws") + "/ws") as ws:
        await ws.send("there")
        assert await ws.recv() == "hello there"



async def test_in_process_calls_take_the_same_entry(settings: Settings) -> None:
    from shared.clients.transport import AsgiExchange

    app = _app(settings.model_copy(update={"auth_enabled": False}))
    exchange = AsgiExchange(app, "http://served.internal")
    async with app.router.lifespan_context(app):
        hot = await exchange.send("POST", "/hot/in", content=b"p")
        routed = await exchange.send("POST", "/hot-not/in")
        with pytest.raises(RuntimeError, match="boom"):  # an app's exception reaches an in-process caller
            await exchange.send("POST", "/hot/boom", content=b"x")
    assert hot.content == b"hot:p" and "x-through-app" not in hot.headers and hot.headers["x-request-id"]
    assert routed.headers["x-through-app"] == "1"
