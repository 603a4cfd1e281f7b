"""LangChain's ChatOpenAI + bind_tools through the gateway (the style rollout processors use)."""

from __future__ import annotations

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from services.gateway.proxy import GatewayProxy
from services.gateway.testing_upstream import Behaviour, ServerThread


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
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
