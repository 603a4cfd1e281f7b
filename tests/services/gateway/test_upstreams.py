"""The upstream pool against real loopback replicas."""

from __future__ import annotations

import time

import orjson
import pytest

from services.gateway.config import GatewayConfig, RetryPolicy, UpstreamSpec
from services.gateway.errors import PathNotAllowed, UnknownModel
from services.gateway.testing_upstream import Behaviour, ServerThread
from services.gateway.upstreams import UpstreamPool, check_path
from shared.errors import Draining, UpstreamUnavailable

BODY = orjson.dumps({"model": "policy", "messages": [{"role": "user", "content": "x"}]})


def pool_over(urls: list[str], **retry: float) -> UpstreamPool:
    specs = [UpstreamSpec(model="policy", url=u, name=f"r{i}") for i, u in enumerate(urls)]
    return UpstreamPool(GatewayConfig(upstreams=specs, retry=RetryPolicy(base_s=0.01, **retry)))


def test_allow_list_blocks_control_endpoints() -> None:
    for path in ("/v1/chat/completions", "/v1/completions", "/v1/models", "/tokenize"):
        check_path(path)
    for path in ("/pause", "/sleep", "/update_weights", "/collective_rpc", "/v1/chat/completions/../../pause"):
        with pytest.raises(PathNotAllowed):
            check_path(path)


async def test_least_loaded_then_sticky() -> None:
    pool = pool_over(["http://127.0.0.1:1", "http://127.0.0.1:2"])
    first = pool.pick("policy", "s1")
    pool.begin(first)
    other = pool.pick("policy", "s2")
    assert other.id != first.id  # least loaded
    pool.begin(other)
    pool.begin(other)
    assert pool.pick("policy", "s1").id == first.id  # sticky despite load
    assert pool.pick("policy", None).id == first.id  # no session: least loaded
    with pytest.raises(UnknownModel):
        pool.pick("nope", None)
    await pool.aclose()


async def test_drain_refuses_new_and_waits_for_inflight() -> None:
    pool = pool_over(["http://127.0.0.1:1"])
    replica = pool.pick("policy", None)
    pool.begin(replica)
    pool.drain()
    with pytest.raises(Draining) as info:
        pool.begin(replica)
    assert info.value.retry_after_s == pool.config.drain_retry_after_s
    assert await pool.wait_idle(0.01) is False
    pool.end(replica)
    assert await pool.wait_idle(0.01) is True
    pool.resume()
    pool.begin(replica)
    await pool.aclose()


async def test_set_upstreams_keeps_live_load_of_kept_replicas() -> None:
    pool = pool_over(["http://127.0.0.1:1"])
    replica = pool.pick("policy", None)
    pool.begin(replica)
    pool.set_upstreams([replica.spec, UpstreamSpec(model="other", url="http://127.0.0.1:3")])
    assert pool.models() == ["other", "policy"] and pool.replicas("policy")[0].inflight == 1
    await pool.aclose()


async def test_send_retries_then_returns_last_status(upstreams: list[ServerThread]) -> None:
    pool = pool_over([upstreams[0].url], max_attempts=3)
    upstreams[0].app.state.upstream.script.extend([Behaviour(status=503), Behaviour(status=408), Behaviour(status=500)])
    reply = await pool.send(pool.pick("policy", None), "/v1/chat/completions", BODY)
    assert reply.status == 500 and reply.retries == 2
    upstreams[0].app.state.upstream.script.extend([Behaviour(status=400)])
    reply = await pool.send(pool.pick("policy", None), "/v1/chat/completions", BODY)
    assert reply.status == 400 and reply.retries == 0  # 400 is not retried
    await pool.aclose()


async def test_retry_after_is_honoured(upstreams: list[ServerThread]) -> None:
    pool = pool_over([upstreams[0].url])
    upstreams[0].app.state.upstream.script.extend([Behaviour(status=429, retry_after="0.3")])
    started = time.perf_counter()
    reply = await pool.send(pool.pick("policy", None), "/v1/chat/completions", BODY)
    assert reply.status == 200 and reply.retries == 1 and time.perf_counter() - started >= 0.3
    await pool.aclose()


async def test_connect_errors_are_retried_then_unavailable() -> None:
    pool = pool_over(["http://127.0.0.1:9"], max_attempts=2)
    with pytest.raises(UpstreamUnavailable) as info:
        await pool.send(pool.pick("policy", None), "/v1/chat/completions", BODY)
    assert "2 attempt" in info.value.message
    await pool.aclose()


async def test_streams_are_returned_open(upstreams: list[ServerThread]) -> None:
    pool = pool_over([upstreams[0].url])
    body = orjson.dumps({"model": "policy", "messages": [{"role": "user", "content": "x"}], "stream": True})
    reply = await pool.send(pool.pick("policy", None), "/v1/chat/completions", body, stream=True)
    assert reply.stream is not None
    lines = [line async for line in reply.stream.aiter_lines() if line]
    await reply.stream.aclose()
    assert lines[-1] == "data: [DONE]"
    await pool.aclose()


async def test_tokenize_is_the_one_non_openai_path_allowed(upstreams: list[ServerThread]) -> None:
    pool = pool_over([upstreams[0].url])
    body = orjson.dumps({"model": "policy", "prompt": "ab"})
    reply = await pool.send(pool.pick("policy", None), "/tokenize", body)
    assert orjson.loads(reply.body)["tokens"] == [97, 98]
    with pytest.raises(PathNotAllowed):
        await pool.send(pool.pick("policy", None), "/pause", body)
    assert all(r["path"] != "/pause" for r in upstreams[0].app.state.upstream.requests)
    await pool.aclose()
