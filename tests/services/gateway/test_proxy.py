"""Bad input, retries, drain, rate limits and mid-stream failures through the real gateway."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import httpx
import openai
import pytest

from services.gateway.config import GatewayConfig, RateLimitPolicy, UpstreamSpec
from services.gateway.proxy import GatewayProxy
from services.gateway.testing_upstream import Behaviour, ServerThread

USER = [{"role": "user", "content": "hi"}]


def script_all(servers: list[ServerThread], *behaviours: Behaviour) -> None:
    for server in servers:
        server.app.state.upstream.script.extend(behaviours)


def post(gw: ServerThread, body: bytes | dict, path: str = "/v1/chat/completions") -> httpx.Response:
    if isinstance(body, dict):
        return httpx.post(gw.url + path, json=body, timeout=10)
    return httpx.post(gw.url + path, content=body, headers={"content-type": "application/json"}, timeout=10)


def assert_openai_error(resp: httpx.Response, status: int, code: str) -> dict:
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"] == code and error["message"]
    return error


def test_invalid_json_is_400(gateway: GatewayProxy, gateway_server: ServerThread) -> None:
    assert_openai_error(post(gateway_server, b"{not json"), 400, "invalid_json")


def test_unknown_model_is_404(gateway: GatewayProxy, gateway_server: ServerThread) -> None:
    c = openai.OpenAI(base_url=gateway_server.url + "/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.NotFoundError) as info:
        c.chat.completions.create(model="nope", messages=USER)
    assert info.value.code == "model_not_found"


def test_tool_message_without_tool_call_id_is_400(gateway: GatewayProxy, gateway_server: ServerThread) -> None:
    messages = [*USER, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, {"role": "tool", "content": "1"}]
    error = assert_openai_error(post(gateway_server, {"model": "policy", "messages": messages}), 400, "invalid_input")
    assert error["param"] == "messages[2].tool_call_id"


def test_unanswered_tool_call_breaks_pairing(gateway: GatewayProxy, gateway_server: ServerThread) -> None:
    messages = [*USER, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, {"role": "user", "content": "?"}]
    error = assert_openai_error(post(gateway_server, {"model": "policy", "messages": messages}), 400, "invalid_tool_pairing")
    assert error["param"] == "messages[2]"


def test_oversized_body_is_413(make_gateway: Callable[..., GatewayProxy], fast_config: Callable[..., GatewayConfig], gateway_server: ServerThread) -> None:
    make_gateway(fast_config(), max_body_bytes=2048)
    body = {"model": "policy", "messages": [{"role": "user", "content": "x" * 5000}]}
    assert_openai_error(post(gateway_server, body), 413, "payload_too_large")


def test_rate_limit_is_429_with_retry_after_per_key(make_gateway: Callable[..., GatewayProxy], fast_config: Callable[..., GatewayConfig], gateway_server: ServerThread) -> None:
    make_gateway(fast_config(rate_limit=RateLimitPolicy(rate_per_s=0.5, burst=2)))
    c = openai.OpenAI(base_url=gateway_server.url + "/v1", api_key="key-1", max_retries=0)
    c.chat.completions.create(model="policy", messages=USER)
    c.chat.completions.create(model="policy", messages=USER)
    with pytest.raises(openai.RateLimitError) as info:
        c.chat.completions.create(model="policy", messages=USER)
    assert float(info.value.response.headers["retry-after"]) >= 1
    other = openai.OpenAI(base_url=gateway_server.url + "/v1", api_key="key-2", max_retries=0)
    assert other.chat.completions.create(model="policy", messages=USER).choices[0].message.content == "ok"


async def test_retries_500_and_429_then_succeeds_and_counts_retries(
    gateway: GatewayProxy, gateway_server: ServerThread, upstreams: list[ServerThread]
) -> None:
    script_all(upstreams, Behaviour(status=500), Behaviour(status=429, retry_after="0.2"))
    started = time.perf_counter()
    c = openai.OpenAI(base_url=gateway_server.url + "/sessions/r/v1", api_key="k", max_retries=0)
    assert c.chat.completions.create(model="policy", messages=USER).choices[0].message.content == "ok"
    assert time.perf_counter() - started >= 0.2  # Retry-After honoured
    (trace,) = await gateway.sink.session("r")
    assert trace.retries == 2 and trace.status == "ok"


async def test_upstream_failing_every_try_is_502_and_traced(
    gateway: GatewayProxy, gateway_server: ServerThread, upstreams: list[ServerThread]
) -> None:
    script_all(upstreams, *[Behaviour(status=500)] * 3)
    assert_openai_error(post(gateway_server, {"model": "policy", "messages": USER}, "/sessions/f/v1/chat/completions"), 502, "upstream_error")
    (trace,) = await gateway.sink.session("f")
    assert trace.status == "error" and trace.http_status == 500 and trace.retries == 2


async def test_slow_upstream_is_504(
    make_gateway: Callable[..., GatewayProxy], fast_config: Callable[..., GatewayConfig],
    gateway_server: ServerThread, upstreams: list[ServerThread],
) -> None:
    config = fast_config()
    config.upstreams = [s.model_copy(update={"timeout_s": 0.1}) for s in config.upstreams]
    config.retry.max_attempts = 1
    gateway = make_gateway(config)
    script_all(upstreams, Behaviour(delay_s=0.5))
    assert_openai_error(post(gateway_server, {"model": "policy", "messages": USER}, "/sessions/t/v1/chat/completions"), 504, "upstream_timeout")
    (trace,) = await gateway.sink.session("t")
    assert trace.status == "error" and trace.error_code == "upstream_timeout"


async def test_dead_replica_falls_over_to_the_live_one(
    make_gateway: Callable[..., GatewayProxy], gateway_server: ServerThread, upstreams: list[ServerThread]
) -> None:
    dead = UpstreamSpec(model="policy", url="http://127.0.0.1:9", name="dead")
    live = UpstreamSpec(model="policy", url=upstreams[0].url, name="live")
    config = GatewayConfig(upstreams=[dead, live])
    config.retry.max_attempts, config.retry.base_s = 2, 0.01
    gateway = make_gateway(config)
    gateway.pool.replicas("policy")[1].served = 5  # make the dead one the least-loaded pick
    assert post(gateway_server, {"model": "policy", "messages": USER}, "/sessions/d/v1/chat/completions").status_code == 200
    (trace,) = await gateway.sink.session("d")
    assert trace.replica == "live"


async def test_drain_refuses_new_calls_while_inflight_one_finishes(
    gateway: GatewayProxy, gateway_server: ServerThread, upstreams: list[ServerThread]
) -> None:
    script_all(upstreams, Behaviour(delay_s=0.4))
    async with httpx.AsyncClient(base_url=gateway_server.url, timeout=10) as http:
        slow = asyncio.create_task(http.post("/v1/chat/completions", json={"model": "policy", "messages": USER}))
        await asyncio.sleep(0.1)
        status = (await http.post("/v1/gateway/drain", json={"wait_s": 0})).json()
        assert status == {"draining": True, "inflight": 1, "idle": False}
        refused = await http.post("/v1/chat/completions", json={"model": "policy", "messages": USER})
        assert_openai_error(refused, 503, "draining")
        assert int(refused.headers["retry-after"]) >= 1
        assert (await slow).status_code == 200
        assert (await http.post("/v1/gateway/drain", json={"wait_s": 1})).json()["idle"] is True
        await http.post("/v1/gateway/resume")
        assert (await http.post("/v1/chat/completions", json={"model": "policy", "messages": USER})).status_code == 200


async def test_stream_that_dies_midway_gives_error_event_and_failed_trace(
    gateway: GatewayProxy, gateway_server: ServerThread, upstreams: list[ServerThread]
) -> None:
    script_all(upstreams, Behaviour(content="a long answer here", die_after_chunks=3))
    c = openai.OpenAI(base_url=gateway_server.url + "/sessions/die/v1", api_key="k", max_retries=0)
    seen = []
    with pytest.raises(openai.APIError) as info:
        for chunk in c.chat.completions.create(model="policy", messages=USER, stream=True):
            seen.extend(ch.delta.content or "" for ch in chunk.choices)
    assert "mid-stream" in str(info.value.message)
    assert "".join(seen) == "a long a"  # role chunk + two 4-char pieces
    (trace,) = await gateway.sink.session("die")
    assert trace.status == "error" and trace.error_code == "upstream_error"
    assert trace.response is not None and trace.response["choices"][0]["message"]["content"] == "a long a"


async def test_control_paths_never_reach_upstream(
    gateway: GatewayProxy, gateway_server: ServerThread, upstreams: list[ServerThread]
) -> None:
    for path in ("/pause", "/v1/pause", "/sessions/x/pause", "/sessions/x/v1/../../pause"):
        assert httpx.post(gateway_server.url + path, json={}).status_code in (404, 405)
    assert all(r["path"] != "/pause" for s in upstreams for r in s.app.state.upstream.requests)
    assert gateway.pool.inflight == 0


async def test_client_leaving_mid_stream_still_writes_the_trace(
    gateway: GatewayProxy, gateway_server: ServerThread, upstreams: list[ServerThread]
) -> None:
    script_all(upstreams, Behaviour(content="x" * 400))
    body = {"model": "policy", "messages": USER, "stream": True}
    async with (httpx.AsyncClient(base_url=gateway_server.url, timeout=10) as http,
                http.stream("POST", "/sessions/gone/v1/chat/completions", json=body) as resp):
        async for _ in resp.aiter_bytes():
            break
    for _ in range(100):
        traces = await gateway.sink.session("gone")
        if traces:
            break
        await asyncio.sleep(0.02)
    (trace,) = traces
    assert trace.status in ("ok", "error")  # the upstream may finish before the gateway notices
    assert trace.error_code in (None, "client_closed") and gateway.pool.inflight == 0


def test_chunked_oversized_body_is_413_without_length_header(
    make_gateway: Callable[..., GatewayProxy], fast_config: Callable[..., GatewayConfig], gateway_server: ServerThread
) -> None:
    make_gateway(fast_config(), max_body_bytes=2048)

    def parts():  # a generator body is sent chunked, with no Content-Length
        yield b'{"model": "policy", "messages": [{"role": "user", "content": "'
        for _ in range(10):
            yield b"x" * 500
        yield b'"}]}'

    resp = httpx.post(gateway_server.url + "/v1/chat/completions", content=parts(), headers={"content-type": "application/json"})
    assert_openai_error(resp, 413, "payload_too_large")


async def test_upstream_key_is_sent_and_client_key_is_not(
    make_gateway: Callable[..., GatewayProxy], fast_config: Callable[..., GatewayConfig],
    gateway_server: ServerThread, upstreams: list[ServerThread],
) -> None:
    config = fast_config()
    config.upstreams = [s.model_copy(update={"api_key": "sk-upstream"}) for s in config.upstreams]
    make_gateway(config)
    c = openai.OpenAI(base_url=gateway_server.url + "/v1", api_key="sk-client", max_retries=0)
    c.chat.completions.create(model="policy", messages=USER)
    (sent,) = [r for s in upstreams for r in s.app.state.upstream.requests]
    assert sent["authorization"] == "Bearer sk-upstream"
