"""Adapters from the real suite components to the rollout ports."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import httpx
from fastapi import FastAPI

from services.envs.routing_env import ToolRoutingEnv
from services.inference.backends.local import LocalBackend
from services.inference.routes import router
from services.inference.service import get_engine_holder
from services.rollout.adapters import (
    BackendPolicy,
    EnvExecutor,
    ToolManagerExecutor,
    local_token_bridge,
    toolcall_parser,
)
from services.tools.calculator import CalculatorTool
from services.tools.manager import ToolManager
from shared.backends.openai_http import OpenAIBackend
from shared.schema import SamplingParams, StepResult, ToolInfo, Trajectory

GREEDY = SamplingParams(temperature=0.0, max_tokens=4)
MESSAGES = [{"role": "user", "content": "Name a fruit."}]


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


async def test_local_policy_token_mode_returns_the_engines_ids_and_logprobs(local_holder: Any) -> None:
    bridge = await local_token_bridge(local_holder)
    policy = BackendPolicy(LocalBackend(local_holder), tokenizer=bridge.tokenizer)
    prompt = bridge.prompt_ids(MESSAGES)
    out = await policy.generate(prompt, sampling=GREEDY)
    assert 0 < len(out.token_ids) <= 4 and out.logprobs is not None and len(out.logprobs) == len(out.token_ids)
    assert out.prompt_tokens == len(prompt) and out.weight_version is not None
    chat = await policy.chat(MESSAGES, tools=None, sampling=GREEDY)
    assert chat.token_ids == out.token_ids  # message mode renders the same prompt, greedy samples the same ids
    body = chat.token_ids[:-1] if chat.token_ids[-1] == bridge.tokenizer.eos_token_id else chat.token_ids
    assert chat.text == bridge.tokenizer.decode(body, skip_special_tokens=False)


async def test_token_bridge_without_a_loaded_engine_loads_no_weights_and_renders_the_same_ids(
        local_holder: Any) -> None:
    from services.inference.config import engine_config
    from services.inference.service import EngineHolder

    fresh = EngineHolder(engine_config())  # a worker whose policy is the gateway: no engine here
    bridge = await local_token_bridge(fresh)
    assert not fresh.loaded  # the tokenizer alone, no model
    engines = await local_token_bridge(local_holder)
    tools = [{"type": "function", "function": {"name": "add", "description": "Add two numbers.",
                                               "parameters": {"type": "object", "properties": {"a": {"type": "number"}}}}}]
    turns = [*MESSAGES, {"role": "assistant", "content": "A pear."}, {"role": "user", "content": "Another?"}]
    assert bridge.prompt_ids(turns, tools) == engines.prompt_ids(turns, tools)
    assert bridge.tokenizer.get_vocab() == engines.tokenizer.get_vocab()
    again = await local_token_bridge(fresh)
    assert again.tokenizer is bridge.tokenizer and not fresh.loaded  # loaded once, still no model


async def test_token_bridge_by_default_is_the_configured_models_tokenizer_alone(local_holder: Any) -> None:
    bridge = await local_token_bridge()  # no engine holder: the worker's own, loaded from the model's files
    engines = await local_token_bridge(local_holder)
    turns = [*MESSAGES, {"role": "assistant", "content": "A pear."}, {"role": "user", "content": "Another?"}]
    assert bridge.prompt_ids(turns) == engines.prompt_ids(turns)
    assert bridge.bridge_ids(turns[-1:], ended_with_eos=True) == engines.bridge_ids(turns[-1:], ended_with_eos=True)
    assert (await local_token_bridge()).tokenizer is bridge.tokenizer  # loaded once per process


async def test_http_policy_message_mode_asks_for_token_ids(local_holder: Any) -> None:
    app = FastAPI()  # the engine's OpenAI routes (the inference service mounts the same router)
    app.include_router(router)
    app.dependency_overrides[get_engine_holder] = lambda: local_holder
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://engine") as client:
        backend = OpenAIBackend("http://engine", model=(await local_holder.get()).name, client=client)
        out = await BackendPolicy(backend).chat(MESSAGES, tools=None, sampling=GREEDY)
    direct = await BackendPolicy(LocalBackend(local_holder), tokenizer=(await local_holder.get()).tokenizer).chat(
        MESSAGES, tools=None, sampling=GREEDY)
    assert out.token_ids == direct.token_ids and out.logprobs is not None
    assert len(out.logprobs) == len(out.token_ids) and out.prompt_tokens


async def test_tool_manager_executor_keeps_the_error_kind() -> None:
    executor = ToolManagerExecutor(ToolManager([CalculatorTool()]))
    assert [t["function"]["name"] for t in executor.tool_infos()] == ["calculator"]
    ok = await executor.call(_call("calculator", expression="6*7"))
    assert ok.ok and "42" in ok.content
    missing = await executor.call(_call("teleport"))
    assert not missing.ok and missing.error_type == "unknown_tool"
    bad = await executor.call({"id": "c2", "function": {"name": "calculator", "arguments": "{oops"}})
    assert not bad.ok and bad.error_type == "invalid_json"


async def test_env_executor_is_fresh_per_trajectory_and_records_the_episode_reward() -> None:
    trajs = [Trajectory(messages=[{"role": "user", "content": "A1?"}]) for _ in range(2)]
    first, second = (EnvExecutor(ToolRoutingEnv(), t) for t in trajs)
    assert first.env is not second.env
    assert {t["function"]["name"] for t in first.tool_infos()} == {"query_status", "delete_item", "respond"}
    looked = await first.call(_call("query_status", item_id="A1"))
    assert looked.ok and looked.content == "A1: shipped" and not first.episode_done
    await first.call(_call("respond", content="It is shipped."))
    assert first.episode_done and trajs[0].metadata["env_reward"] == 1.0
    assert trajs[1].metadata["env_reward"] == 0.0 and not second.episode_done
    unknown = await second.call(_call("launch"))
    assert not unknown.ok and unknown.error_type == "unknown_tool"
    broken = await second.call({"function": {"name": "query_status", "arguments": "[1, 2]"}})
    assert not broken.ok and broken.error_type == "tool_exception"


class _ShapedManager:
    """A tool manager by shape only (not the tools service's ``ToolManager``): one ``echo`` tool."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def names(self) -> list[str]:
        return ["echo"]

    def get(self, name: str) -> Any:
        return None

    def tool_infos(self) -> list[ToolInfo]:
        return [ToolInfo.model_validate({"type": "function", "function": {"name": "echo", "parameters": {}}})]

    async def call_structured(self, tool_call: Any) -> Any:
        self.calls.append(tool_call)
        name = tool_call["function"]["name"]
        ok = name == "echo"
        return SimpleNamespace(ok=ok, content=f"echo:{tool_call['function']['arguments']}" if ok else "Error: no",
                               error_kind=None if ok else "unknown_tool")


async def test_a_tool_manager_is_taken_by_shape(smol_tokenizer: Any) -> None:
    from services.rollout._facade import as_executor
    from services.rollout.api_rollout import APIMultiTurnRollout
    from shared.errors import InvalidInput
    from tests.services.rollout.support import ScriptedPolicy, hermes_parser, tool_call_text

    assert isinstance(as_executor(ToolManager([CalculatorTool()])), ToolManagerExecutor)
    try:
        as_executor(object())  # type: ignore[arg-type]
    except InvalidInput as exc:
        assert exc.param == "tool_manager"
    else:
        raise AssertionError("an object shaped like neither a manager nor an executor must be refused")
    manager = _ShapedManager()
    policy = ScriptedPolicy(smol_tokenizer, lambda user, turn: tool_call_text("echo", x=1) if turn == 0 else "done")
    rollout = APIMultiTurnRollout(policy, manager, max_turns=3, parser=hermes_parser)
    [traj] = await rollout.run([{"messages": MESSAGES}])
    assert traj.stop_reason == "stop" and len(manager.calls) == 1
    assert [m.text() for m in traj.messages if m.role == "tool"] == ['echo:{"x": 1}']


class _ShapedEnv:
    """An env by shape only (not derived from the envs service's ``Env``), with no tool schemas."""

    inline_safe = True

    def __init__(self) -> None:
        self.steps: list[tuple[str, dict[str, Any]]] = []
        self.closed = False

    def reset(self, trajectory: Any = None, *, seed: int | None = None) -> StepResult:
        return StepResult()

    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        self.steps.append((tool_name, arguments))
        return StepResult(observation={"text": f"step {len(self.steps)}"}, reward=0.5, done=len(self.steps) == 2,
                          info={"n": len(self.steps)})

    def tools(self) -> list[dict[str, Any]]:
        return []

    def close(self) -> None:
        self.closed = True


async def test_env_executor_steps_an_env_by_shape_with_the_generic_tool() -> None:
    env, traj = _ShapedEnv(), Trajectory(messages=MESSAGES)
    executor = EnvExecutor(env, traj)
    assert [t["function"]["name"] for t in executor.tool_infos()] == ["env_action"]
    first = await executor.call(_call("env_action", move="up"))
    assert first.ok and first.content == "step 1" and first.reward == 0.5 and not executor.episode_done
    second = await executor.call(_call("env_action"))
    assert second.reward == 0.5 and executor.episode_done
    assert traj.metadata["env_reward"] == 1.0 and traj.metadata["env_info"] == {"n": 2}
    assert env.steps == [("env_action", {"move": "up"}), ("env_action", {})]
    executor.close()
    assert env.closed


def test_shared_parser_keeps_every_attempt_with_its_status() -> None:
    parse = toolcall_parser("hermes")
    text = ('<tool_call>\n{"name": "query_status", "arguments": {"item_id": "A1"}}\n</tool_call>'
            '<tool_call>\n{"name": "respond", "arguments": \n</tool_call>')
    calls = parse(text)
    assert [c.status for c in calls] == ["ok", "invalid_json"]
    assert calls[0].name == "query_status" and calls[0].arguments == {"item_id": "A1"}
    assert toolcall_parser()("no calls here") == []


_THINK_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                   "{% if enable_thinking %}<think>\n{% endif %}<|im_start|>assistant\n")


async def test_extra_body_reaches_a_tokenizer_rendering_policy(smol_tokenizer: Any) -> None:
    from services.inference.engine import Engine
    from services.inference.scripted import scripted_model
    from services.inference.service import EngineHolder
    from services.rollout.api_rollout import APIMultiTurnRollout
    from shared.errors import InvalidInput

    engine = Engine(scripted_model(smol_tokenizer, "alpha beta gamma"), smol_tokenizer, name="scripted")
    try:
        policy = BackendPolicy(LocalBackend(EngineHolder(engine=engine)), tokenizer=smol_tokenizer)
        sampling = SamplingParams(temperature=0.0, max_tokens=16)
        plain = await policy.chat(MESSAGES, tools=None, sampling=sampling,
                                  extra_body={"chat_template": _THINK_TEMPLATE})
        thinking = await policy.chat(MESSAGES, tools=None, sampling=sampling, extra_body={
            "chat_template": _THINK_TEMPLATE, "chat_template_kwargs": {"enable_thinking": True}})
        dashscope_style = await policy.chat(MESSAGES, tools=None, sampling=sampling,
                                            extra_body={"chat_template": _THINK_TEMPLATE, "enable_thinking": True})
        think_ids = smol_tokenizer.encode("<think>\n", add_special_tokens=False)
        assert thinking.prompt_tokens == dashscope_style.prompt_tokens == plain.prompt_tokens + len(think_ids)
        # A sampling field in extra_body overrides the rollout's sampling: max_tokens cuts the reply.
        rollout = APIMultiTurnRollout(policy, max_turns=1, sampling_params=sampling, extra_body={"max_tokens": 2})
        [traj] = await rollout.run([{"messages": MESSAGES}])
        assert traj.stop_reason == "length" and traj.steps[0].completion_tokens == 2
        try:
            await policy.chat(MESSAGES, tools=None, sampling=sampling, extra_body={"guided_json": {}})
        except InvalidInput as exc:
            assert exc.param == "extra_body.guided_json"
        else:
            raise AssertionError("an extra_body key the policy cannot honour must be refused")
    finally:
        engine.close()
