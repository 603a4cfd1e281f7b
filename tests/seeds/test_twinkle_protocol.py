"""Twinkle seed, "Protocol": ``API`` and ``OpenAI`` called as the document shows them, against the
local inference server on loopback (real HTTP, real ``openai`` client) with a SCRIPTED policy.

trajforge names: ``twinkle_agentic.protocol.{base.API, openai.OpenAI}`` are
``services.rollout.protocol.{API, OpenAI}``; ``SamplingParams`` is ``shared.schema.SamplingParams``.
"""

from __future__ import annotations

from typing import Any

import httpx

from services.rollout.api_rollout import APIMultiTurnRollout
from services.rollout.protocol import API, OpenAI
from shared.schema import SamplingParams
from tests.seeds.seed_support import scripted_server, tool_call_reply


def test_openai_reply_is_a_message_dict() -> None:
    with scripted_server("巴黎。") as url:
        api = OpenAI(
            model="qwen3.5-32b",
            base_url=f"{url}/v1",
            api_key="EMPTY",
        )
        trajectory = {
            "messages": [
                {"role": "user", "content": "法国的首都是什么？"},
            ]
        }
        sp = SamplingParams(temperature=0.7, max_tokens=512)
        reply = api(trajectory, sp)
    assert isinstance(reply, dict)
    assert reply["role"] == "assistant" and reply["content"] == "巴黎。"
    assert reply["finish_reason"] == "stop"


def test_num_samples_above_one_returns_one_message_per_choice() -> None:
    with scripted_server("yes") as url:
        api = OpenAI(model="qwen3.5-32b", base_url=f"{url}/v1", api_key="EMPTY")
        replies = api({"messages": [{"role": "user", "content": "?"}]}, SamplingParams(num_samples=3, max_tokens=8))
    assert isinstance(replies, list) and len(replies) == 3
    assert all(r == {"role": "assistant", "content": "yes", "finish_reason": "stop"} for r in replies)


def test_tools_are_sent_and_tool_calls_parsed() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    with scripted_server(tool_call_reply("get_weather", '{"city": "Paris"}')) as url:
        api = OpenAI(model="qwen3.5-32b", base_url=f"{url}/v1", api_key="EMPTY")
        reply = api({"messages": [{"role": "user", "content": "weather?"}], "tools": tools},
                    SamplingParams(max_tokens=64))
    assert isinstance(reply, dict)
    [call] = reply["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    assert reply["finish_reason"] == "tool_calls"


def test_client_kwargs_reach_the_openai_client() -> None:
    seen: list[str] = []

    def record(request: httpx.Request) -> None:
        seen.append(request.headers.get("x-run", ""))

    with scripted_server("ok") as url:
        api = OpenAI(model="qwen3.5-32b", base_url=f"{url}/v1", api_key="EMPTY", client_kwargs={
            "default_headers": {"x-run": "seed"}, "max_retries": 0,
            "http_client": httpx.Client(event_hooks={"request": [record]})})
        api({"messages": [{"role": "user", "content": "hi"}]}, SamplingParams(max_tokens=4))
    assert seen == ["seed"]


class MyCustomAPI(API):
    """The document's custom client: any callable backend behind ``__call__``."""

    def __init__(self) -> None:
        self.seen: list[float] = []

    def __call__(self, trajectory: Any, sampling_params: Any, **kwargs: Any) -> dict[str, Any]:
        self.seen.append(sampling_params.temperature)
        last = trajectory["messages"][-1]["content"]
        return {"role": "assistant", "content": f"echo: {last}"}


def test_a_custom_api_drives_the_api_rollout() -> None:
    api = MyCustomAPI()
    rollout = APIMultiTurnRollout(api=api, sampling_params=SamplingParams(temperature=0.3), max_turns=3)
    [result] = rollout([{"messages": [{"role": "user", "content": "ping"}]}])
    assert result["stop_reason"] == "stop" and result["turns"] == 1
    assert result["messages"][-1]["content"] == "echo: ping"
    assert api.seen == [0.3]
