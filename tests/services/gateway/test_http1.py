"""The keep-alive HTTP/1.1 client against a real uvicorn server."""

from __future__ import annotations

import asyncio
import time

import orjson
import pytest

from services.gateway.http1 import ConnectFailed, Http1Client, ReadTimedOut
from services.gateway.testing_upstream import Behaviour, ServerThread

CHAT = orjson.dumps({"model": "policy", "messages": [{"role": "user", "content": "x"}]})
JSON = {"content-type": "application/json"}


async def test_post_and_get_reuse_one_connection(upstreams: list[ServerThread]) -> None:
    client = Http1Client()
    url = upstreams[0].url
    first = await client.request("POST", url + "/v1/chat/completions", body=CHAT, headers=JSON)
    second = await client.request("GET", url + "/v1/models")
    assert first.status_code == 200 and orjson.loads(first.content)["choices"][0]["message"]["content"] == "ok"
    assert orjson.loads(second.content)["data"][0]["id"] == "policy"
    assert second.conn is first.conn and second.conn.reused
    await client.aclose()


async def test_chunked_stream_lines(upstreams: list[ServerThread]) -> None:
    client = Http1Client()
    body = orjson.dumps({"model": "policy", "messages": [{"role": "user", "content": "x"}], "stream": True})
    resp = await client.request("POST", upstreams[0].url + "/v1/chat/completions", body=body, headers=JSON, stream=True)
    assert "chunked" in resp.headers["transfer-encoding"]
    lines = [line async for line in resp.aiter_lines() if line]
    await resp.aclose()
    assert lines[-1] == "data: [DONE]" and all(line.startswith("data: ") for line in lines)
    again = await client.request("GET", upstreams[0].url + "/v1/models")
    assert again.conn is resp.conn  # a stream read to its end gives its connection back
    await client.aclose()


async def test_error_status_is_returned_not_raised(upstreams: list[ServerThread]) -> None:
    client = Http1Client()
    upstreams[0].app.state.upstream.script.append(Behaviour(status=429, retry_after="2"))
    resp = await client.request("POST", upstreams[0].url + "/v1/chat/completions", body=CHAT, headers=JSON)
    assert resp.status_code == 429 and resp.headers["retry-after"] == "2"
    await client.aclose()


async def test_connect_refused_and_read_timeout(upstreams: list[ServerThread]) -> None:
    client = Http1Client()
    with pytest.raises(ConnectFailed):
        await client.request("GET", "http://127.0.0.1:9/v1/models")
    upstreams[0].app.state.upstream.script.append(Behaviour(delay_s=0.5))
    with pytest.raises(ReadTimedOut):
        await client.request("POST", upstreams[0].url + "/v1/chat/completions", body=CHAT, headers=JSON, timeout_s=0.1)
    await client.aclose()


async def test_idle_connection_closed_by_server_is_replaced(upstreams: list[ServerThread]) -> None:
    client = Http1Client()
    first = await client.request("GET", upstreams[0].url + "/v1/models")
    first.conn.writer.transport.abort()  # as if the server had dropped the idle connection
    second = await client.request("GET", upstreams[0].url + "/v1/models")
    assert second.status_code == 200 and second.conn is not first.conn
    await client.aclose()


async def _scripted_server() -> tuple[asyncio.Server, str]:
    """A raw HTTP/1.1 server: ``/head/<ms>`` waits before the head, ``/body/<ms>`` between head and body."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                kind, ms = head.split(b" ")[1].decode().strip("/").split("/")
                if kind == "head":
                    await asyncio.sleep(int(ms) / 1000)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
                await writer.drain()
                if kind == "body":
                    await asyncio.sleep(int(ms) / 1000)
                writer.write(b"hello")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def test_a_body_that_stalls_after_its_head_times_out_and_the_client_recovers() -> None:
    server, url = await _scripted_server()
    client = Http1Client()
    try:
        started = time.perf_counter()
        with pytest.raises(ReadTimedOut):
            await client.request("POST", url + "/body/400", timeout_s=0.1)
        assert 0.09 <= time.perf_counter() - started < 0.35  # at its deadline, not before, not at the server's pace
        ok = await client.request("POST", url + "/body/0", timeout_s=0.1)
        assert (ok.status_code, ok.content) == (200, b"hello")
        assert client._deadlines._due == {}  # nothing left armed once reads end, failed or not
    finally:
        await client.aclose()
        server.close()


async def test_each_read_keeps_its_own_deadline_among_concurrent_ones() -> None:
    """Short deadlines fire while longer ones, armed before and after them, still succeed."""
    server, url = await _scripted_server()
    client = Http1Client()
    calls = [("/head/300", 5.0), ("/head/300", 0.1), ("/head/50", 5.0), ("/body/300", 0.15), ("/head/0", 0.05),
             ("/head/250", 1.0)]
    try:
        started = time.perf_counter()
        outcomes = await asyncio.gather(*(client.request("POST", url + path, timeout_s=t) for path, t in calls),
                                        return_exceptions=True)
        elapsed = time.perf_counter() - started
        kinds = [type(o).__name__ if isinstance(o, Exception) else o.content for o in outcomes]
        assert kinds == [b"hello", "ReadTimedOut", b"hello", "ReadTimedOut", b"hello", b"hello"]
        assert elapsed < 1.0 and client._deadlines._due == {}
    finally:
        await client.aclose()
        server.close()
