"""The gateway on loopback, driven by the real openai client against real fake upstreams."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from services.gateway.proxy import GatewayProxy
from services.gateway.testing_upstream import Behaviour, ServerThread, decode, encode, render

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def script(server: ServerThread, *behaviours: Behaviour) -> None:
    server.app.state.upstream.script.extend(behaviours)


def script_all(servers: list[ServerThread], *behaviours: Behaviour) -> None:
    for server in servers:
        script(server, *behaviours)


def client(gw: ServerThread, base: str = "/v1") -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + base, api_key="k", max_retries=0)


async def test_non_streaming_chat_returns_plain_openai_shape_and_captures_tokens(
    gateway: GatewayProxy, gateway_server: ServerThread, upstreams: list[ServerThread]
) -> None:
    messages = [{"role": "user", "content": "hello"}]
    reply = client(gateway_server, "/sessions/s1/v1").chat.completions.create(model="policy", messages=messages)
    assert reply.choices[0].message.content == "ok"
    assert reply.choices[0].logprobs is None
    assert "token_ids" not in reply.choices[0].model_dump() or reply.choices[0].model_extra.get("token_ids") is None
    assert "prompt_token_ids" not in (reply.model_extra or {})
    sent = [r for s in upstreams for r in s.app.state.upstream.requests]
    assert sent[0]["body"]["return_token_ids"] is True and sent[0]["body"]["logprobs"] is True
    (trace,) = await gateway.sink.session("s1")
    assert trace.prompt_token_ids == encode(render(messages))
    assert decode(trace.completion_token_ids or []) == "ok<|end|>"
    assert trace.logprobs is not None and len(trace.logprobs) == len(trace.completion_token_ids or [])
    assert trace.status == "ok" and trace.finish_reason == "stop" and trace.replica in ("a", "b")
    assert trace.usage is not None and trace.usage["completion_tokens"] == len(trace.completion_token_ids or [])


async def test_client_that_asks_for_token_ids_and_logprobs_gets_them(
    gateway: GatewayProxy, gateway_server: ServerThread
) -> None:
    reply = client(gateway_server).chat.completions.create(
        model="policy", messages=[{"role": "user", "content": "x"}], logprobs=True, extra_body={"return_token_ids": True}
    )
    extra = reply.choices[0].model_extra or {}
    assert decode(extra["token_ids"]) == "ok<|end|>"
    assert reply.choices[0].logprobs is not None and len(reply.choices[0].logprobs.content or []) == len(extra["token_ids"])


async def test_async_client_with_header_session_and_attempt(
    gateway: GatewayProxy, gateway_server: ServerThread
) -> None:
    aclient = openai.AsyncOpenAI(
        base_url=gateway_server.url + "/v1", api_key="k", max_retries=0,
        default_headers={"X-Trajforge-Session": "hs", "X-Trajforge-Attempt": "2"},
    )
    for _ in range(2):
        await aclient.chat.completions.create(model="policy", messages=[{"role": "user", "content": "hi"}])
    await aclient.close()
    traces = await gateway.sink.session("hs")
    assert [t.sequence for t in traces] == [0, 1]
    assert {t.attempt for t in traces} == {2}


async def test_session_is_sticky_and_sessions_spread_across_replicas(
    gateway: GatewayProxy, gateway_server: ServerThread
) -> None:
    for session in ("p", "q"):
        c = client(gateway_server, f"/sessions/{session}/v1")
        for _ in range(3):
            c.chat.completions.create(model="policy", messages=[{"role": "user", "content": "hi"}])
    replicas = {s: {t.replica for t in await gateway.sink.session(s)} for s in ("p", "q")}
    assert len(replicas["p"]) == 1 and len(replicas["q"]) == 1
    # Both replicas idle when q arrives: least-loaded ties break on calls served, so q lands elsewhere.
    assert replicas["p"] != replicas["q"]


async def test_streaming_tool_call_deltas_reach_client_and_trace_is_assembled(
    gateway: GatewayProxy, gateway_server: ServerThread, upstreams: list[ServerThread]
) -> None:
    calls = [{"name": "get_weather", "arguments": '{"city": "Paris"}'}, {"name": "get_weather", "arguments": '{"city": "Tokyo"}'}]
    script_all(upstreams, Behaviour(content="", tool_calls=calls))
    stream = client(gateway_server, "/sessions/st/v1").chat.completions.create(
        model="policy", messages=[{"role": "user", "content": "weather?"}], tools=[WEATHER_TOOL], stream=True
    )
    args: dict[int, str] = {}
    finish = None
    for chunk in stream:
        assert chunk.usage is None
        for choice in chunk.choices:
            assert "token_ids" not in (choice.model_extra or {})
            finish = choice.finish_reason or finish
            for tc in choice.delta.tool_calls or []:
                args[tc.index] = args.get(tc.index, "") + (tc.function.arguments or "")
    assert finish == "tool_calls"
    assert [json.loads(args[i])["city"] for i in sorted(args)] == ["Paris", "Tokyo"]
    (trace,) = await gateway.sink.session("st")
    message = trace.response["choices"][0]["message"]
    assert [c["function"]["arguments"] for c in message["tool_calls"]] == [c["arguments"] for c in calls]
    assert trace.parse_statuses == ["ok", "ok"]
    assert decode(trace.completion_token_ids or []).endswith("</tool_call><|end|>")
    assert trace.logprobs is not None and len(trace.logprobs) == len(trace.completion_token_ids or [])
    assert trace.usage is not None and trace.prompt_token_ids


async def test_stream_with_usage_requested_keeps_usage_chunk(
    gateway: GatewayProxy, gateway_server: ServerThread
) -> None:
    stream = client(gateway_server).chat.completions.create(
        model="policy", messages=[{"role": "user", "content": "x"}], stream=True, stream_options={"include_usage": True}
    )
    usages = [c.usage for c in stream if c.usage is not None]
    assert len(usages) == 1 and usages[0].completion_tokens == len(encode("ok<|end|>"))


async def test_completions_endpoint_captures_prompt_ids(
    gateway: GatewayProxy, gateway_server: ServerThread
) -> None:
    reply = client(gateway_server, "/sessions/c1/v1").completions.create(model="policy", prompt="abc")
    assert reply.choices[0].text == "ok" and reply.choices[0].logprobs is None
    (trace,) = await gateway.sink.session("c1")
    assert trace.prompt_token_ids == encode("abc") and trace.completion_token_ids == encode("ok")
    assert trace.logprobs is not None and len(trace.logprobs) == 2


async def test_models_lists_routed_names(gateway: GatewayProxy, gateway_server: ServerThread) -> None:
    ids = [m.id for m in client(gateway_server, "/sessions/m/v1").models.list()]
    assert ids == ["policy"]


async def test_three_turn_tool_session_merges_into_exact_trajectory(
    gateway: GatewayProxy, gateway_server: ServerThread, upstreams: list[ServerThread]
) -> None:
    calls = [{"name": "get_weather", "arguments": '{"city": "Paris"}'}]
    script_all(upstreams, Behaviour(content="", tool_calls=calls), Behaviour(content="11C in Paris."), Behaviour(content="Bye."))
    c = client(gateway_server, "/sessions/three/v1")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
    first = c.chat.completions.create(model="policy", messages=messages, tools=[WEATHER_TOOL], stream=True)
    calls_seen: dict[int, dict[str, str]] = {}
    for chunk in first:
        for tc in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            slot = calls_seen.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            slot["id"] += tc.id or ""
            slot["name"] += (tc.function.name or "") if tc.function else ""
            slot["arguments"] += (tc.function.arguments or "") if tc.function else ""
    call = calls_seen[0]
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [{"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}]},
        {"role": "tool", "tool_call_id": call["id"], "content": "11C"},
    ]
    second = c.chat.completions.create(model="policy", messages=messages, tools=[WEATHER_TOOL])
    messages += [second.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "thanks"}]
    c.chat.completions.create(model="policy", messages=messages, tools=[WEATHER_TOOL])

    merged = httpx.get(gateway_server.url + "/v1/sessions/three/trajectory").json()
    assert merged["mismatches"] == [] and merged["joins"] == 2 and len(merged["segments"]) == 1
    tokens = merged["segments"][0]["tokens"]
    text = decode(tokens["prompt_ids"] + tokens["response_ids"])
    assert text == render(messages) + "Bye.<|end|>"
    sampled = decode([t for t, m in zip(tokens["response_ids"], tokens["loss_mask"]) if m])
    assert sampled == '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}</tool_call><|end|>11C in Paris.<|end|>Bye.<|end|>'
    assert all((lp is None) == (m == 0) for lp, m in zip(tokens["logprobs"], tokens["loss_mask"]))


async def test_reasoning_stripped_by_template_counts_a_prefix_mismatch_metric(
    gateway: GatewayProxy, gateway_server: ServerThread, upstreams: list[ServerThread]
) -> None:
    from prometheus_client import REGISTRY

    def mismatches() -> float:
        return REGISTRY.get_sample_value("trajforge_gateway_prefix_mismatches_total", {"cause": "template_strip"}) or 0.0

    before = mismatches()
    script_all(upstreams, Behaviour(content="A", reasoning="let me think"))
    c = client(gateway_server, "/sessions/think/v1")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "q"}]
    first = c.chat.completions.create(model="policy", messages=messages)
    messages += [{"role": "assistant", "content": first.choices[0].message.content}, {"role": "user", "content": "more"}]
    c.chat.completions.create(model="policy", messages=messages)
    for _ in range(2):  # reading twice must not count twice
        merged = httpx.get(gateway_server.url + "/v1/sessions/think/trajectory").json()
    assert [m["cause"] for m in merged["mismatches"]] == ["template_strip"]
    assert len(merged["segments"]) == 2
    assert mismatches() == before + 1
    assert (REGISTRY.get_sample_value("trajforge_gateway_prefix_mismatch_ratio") or 0) > 0


async def test_traces_route_lists_session_rows(gateway: GatewayProxy, gateway_server: ServerThread) -> None:
    client(gateway_server, "/sessions/tr/attempts/3/v1").chat.completions.create(model="policy", messages=[{"role": "user", "content": "x"}])
    rows = httpx.get(gateway_server.url + "/v1/sessions/tr/traces").json()
    assert len(rows) == 1 and rows[0]["attempt"] == 3 and rows[0]["request"]["messages"][0]["content"] == "x"


async def test_upstreams_replaced_through_the_api(
    gateway: GatewayProxy, gateway_server: ServerThread, upstreams: list[ServerThread]
) -> None:
    specs = [{"model": "other", "url": upstreams[1].url, "name": "only-b", "served_model": "policy"}]
    put = httpx.put(gateway_server.url + "/v1/gateway/upstreams", json=specs)
    assert put.status_code == 200 and [u["name"] for u in put.json()] == ["only-b"]
    assert [u["model"] for u in httpx.get(gateway_server.url + "/v1/gateway/upstreams").json()] == ["other"]
    reply = client(gateway_server, "/sessions/api/v1").chat.completions.create(model="other", messages=[{"role": "user", "content": "x"}])
    assert reply.model == "other"
    assert upstreams[1].app.state.upstream.requests[-1]["body"]["model"] == "policy"  # served name upstream
    (trace,) = await gateway.sink.session("api")
    assert trace.replica == "only-b" and trace.model == "other"
    with pytest.raises(openai.NotFoundError):
        client(gateway_server).chat.completions.create(model="policy", messages=[{"role": "user", "content": "x"}])


@tool
def get_weather(city: str) -> str:
    """Weather for a city (LangChain tool for the bind_tools test)."""
    return f"11C in {city}"


async def test_bind_tools_call_is_parsed_by_langchain_and_captured(
    gateway: GatewayProxy, gateway_server: ServerThread, upstreams: list[ServerThread]
) -> None:
    for server in upstreams:
        server.app.state.upstream.script.append(Behaviour(content="", tool_calls=[{"name": "get_weather", "arguments": '{"city": "Oslo"}'}]))
    llm = ChatOpenAI(model="policy", base_url=gateway_server.url + "/sessions/lc/v1", api_key="k", max_retries=0)
    reply = await llm.bind_tools([get_weather]).ainvoke("Weather in Oslo?")
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("get_weather", {"city": "Oslo"})]
    (trace,) = await gateway.sink.session("lc")
    assert trace.parse_statuses == ["ok"] and trace.completion_token_ids
    assert trace.request["tools"][0]["function"]["name"] == "get_weather"
