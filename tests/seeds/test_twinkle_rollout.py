"""Twinkle seed, "Multi-turn rollout" and "Multi-turn tool-use guide": the examples as written,
against the local inference server / engine with a SCRIPTED policy (fixed reply, real tokenizer,
real engine path and HTTP); tools and envs are real Python.

trajforge names: ``twinkle_agentic.rollout.{api_multi_turn.APIMultiTurnRollout,
multi_turn.MultiTurnRollout}`` are ``services.rollout.{api_rollout,token_rollout}``; the
``vllm_sampler`` is any ``InferenceBackend`` wrapped as ``BackendPolicy``; ``template`` is the
model's tokenizer. Results are ``Trajectory`` models that also read like the seed's dicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from services.envs.base import Env, EnvTool
from services.inference.backends.local import LocalBackend
from services.inference.engine import Engine
from services.inference.scripted import scripted_model
from services.inference.service import EngineHolder
from services.rollout.adapters import BackendPolicy
from services.rollout.api_rollout import APIMultiTurnRollout
from services.rollout.protocol import OpenAI
from services.rollout.rollout_base import Rollout
from services.rollout.token_rollout import MultiTurnRollout
from services.tools.base import Tool
from services.tools.manager import ToolManager
from shared.schema import SamplingParams, StepResult, Trajectory
from tests.seeds.seed_support import scripted_server, smol_tokenizer, tool_call_reply


class WeatherTool(Tool):
    def __call__(self, tool_name: str, arguments: dict[str, Any]) -> str:
        city = arguments.get("city", "未知")
        return f"{city}的天气：晴，25°C。"

    def tool_info(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "获取城市的当前天气。",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "description": "城市名称。"}},
                    "required": ["city"],
                },
            },
        }


def test_quick_start_api_rollout_with_a_tool() -> None:
    manager = ToolManager([WeatherTool()])
    with scripted_server(tool_call_reply("get_weather", '{"city": "北京"}')) as url:
        api = OpenAI(model="qwen3.5-32b", base_url=f"{url}/v1")
        rollout = APIMultiTurnRollout(
            api=api,
            tool_manager=manager,
            sampling_params=SamplingParams(temperature=0.7, max_tokens=2048),
            max_turns=6,
            concurrency=8,
        )
        trajectories = [{"messages": [{"role": "user", "content": "北京今天天气怎么样？"}]}]
        results = rollout(trajectories)
    [r] = results
    # The scripted policy calls the tool on every turn, so the budget ends it.
    assert r["turns"] == 6 and r["stop_reason"] == "max_turns"
    tool_turns = [msg for msg in r["messages"] if msg["role"] == "tool"]
    assert len(tool_turns) == 5 and tool_turns[0].get("content", "")[:100] == "北京的天气：晴，25°C。"
    assert r["messages"][1]["tool_calls"][0]["function"]["name"] == "get_weather"


class CodeEnv(Env):
    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        code = arguments.get("code", "")
        result = f"executed {code!r}"
        return StepResult(observation=result, reward=1.0, done=False)

    def tools(self) -> list[dict[str, Any]]:
        return [{
            "type": "function",
            "function": {
                "name": "run_python",
                "description": "执行 Python 代码。",
                "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
            },
        }]


class CountdownEnv(CodeEnv):
    """Ends its episode after ``budget`` steps (one env per trajectory)."""

    def __init__(self, budget: int) -> None:
        self.budget, self.steps = budget, 0

    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        self.steps += 1
        return StepResult(observation=f"step {self.steps}", reward=0.5, done=self.steps >= self.budget)


def test_env_as_tool_in_an_api_rollout() -> None:
    env = CodeEnv()
    env_tools = EnvTool.from_env(env)
    manager = ToolManager(env_tools)
    with scripted_server(tool_call_reply("run_python", '{"code": "print(1)"}')) as url:
        api = OpenAI(model="qwen3.5-32b", base_url=f"{url}/v1")
        # The document uses max_turns=10; 3 shows the same with a third of the (scripted) calls.
        rollout = APIMultiTurnRollout(api=api, tool_manager=manager, max_turns=3)
        [r] = rollout([{"messages": [{"role": "user", "content": "run it"}]}])
    assert r["stop_reason"] == "max_turns" and r["turns"] == 3
    assert env_tools[0].episode_reward == 2.0  # the last call is cut by the turn budget


def test_per_trajectory_tool_managers_stop_when_each_env_is_done(tmp_path: Path) -> None:
    trajectories = [{"id": f"t{b}", "messages": [{"role": "user", "content": f"go {b}"}]} for b in (1, 2, 3)]
    managers = []
    for traj in trajectories:
        env = CountdownEnv(budget=int(traj["id"][1:]))  # type: ignore[index]
        env_tools = EnvTool.from_env(env)
        managers.append(ToolManager(env_tools))
    with scripted_server(tool_call_reply("run_python", '{"code": "x"}')) as url:
        rollout = APIMultiTurnRollout(
            api=OpenAI(model="qwen3.5-32b", base_url=f"{url}/v1"),
            tool_manager=None, max_turns=10, trace_dir=str(tmp_path),
            trace_callback=lambda t: t["turns"] > 1,  # only store multi-turn conversations
            success_callback=lambda t: t.get("stop_reason") == "stop",
        )
        results = rollout(trajectories, tool_manager=managers)
    assert [r["turns"] for r in results] == [1, 2, 3]
    assert all(r["stop_reason"] == "stop" for r in results)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["000000-ok-t2-0.json", "000000-ok-t3-0.json"]


def test_multi_turn_rollout_gives_token_ids_labels_and_logprobs(tmp_path: Path) -> None:
    tok = smol_tokenizer()
    reply = tool_call_reply("get_weather", '{"city": "Paris"}')
    engine = Engine(scripted_model(tok, reply), tok, name="scripted", max_batch_size=8)
    try:
        vllm_sampler = BackendPolicy(LocalBackend(EngineHolder(engine=engine)), tokenizer=tok)
        manager = ToolManager([WeatherTool()])
        rollout = MultiTurnRollout(
            sampler=vllm_sampler,
            template=tok,
            tool_manager=manager,
            # The document's max_tokens=4096 would overflow this small model's 4096-token window.
            sampling_params=SamplingParams(temperature=0.7, max_tokens=1024),
            max_turns=2,
            max_trajectory_tokens=8192,
            trace_dir=str(tmp_path / "rollout_traces"),
        )
        results = rollout([{"messages": [{"role": "user", "content": "weather in Paris?"}]}])
    finally:
        engine.close()
    [r] = results
    assert r["turns"] == 2 and r["stop_reason"] == "max_turns" and r["truncated"] is True
    sampled = [tok_id for tok_id, label in zip(r["input_ids"], r["labels"], strict=True) if label != -100]
    reply_ids = tok(reply, add_special_tokens=False)["input_ids"]
    assert sampled[: len(reply_ids)] == reply_ids  # the engine's own ids, not re-tokenised text
    assert r["labels"][0] == -100 and len(r["logprobs"]) == len(r["tokens"].response_ids)
    assert [m["role"] for m in r["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert len(list((tmp_path / "rollout_traces").iterdir())) == 1


class EchoRollout(Rollout):
    """A user rollout on the seed's base class."""

    async def run(self, trajectories: Sequence[Trajectory | dict[str, Any]], **kwargs: Any) -> list[Trajectory]:
        out = [t if isinstance(t, Trajectory) else Trajectory.model_validate(t) for t in trajectories]
        for t in out:
            t.messages.append(t.messages[-1].model_copy(update={"role": "assistant"}))
            t.turns, t.stop_reason = 1, "stop"
        return out


async def test_rollout_base_is_awaitable_inside_a_loop_and_blocking_outside() -> None:
    rollout = EchoRollout()
    [r] = await rollout([{"messages": [{"role": "user", "content": "hi"}]}])
    assert r["messages"][-1]["content"] == "hi" and r["stop_reason"] == "stop"
    with pytest.raises(TypeError):
        Rollout()  # type: ignore[abstract]
