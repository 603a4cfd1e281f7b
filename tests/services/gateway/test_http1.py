"""The keep-alive HTTP/1.1 client against a real uvicorn server."""

from __future__ import annotations

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
