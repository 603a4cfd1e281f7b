from __future__ import annotations

from typing import Any

from services.envs.base import Env, EnvTool, to_observation_text
from services.envs.counter_env import CounterEnv
from shared.schema import StepResult


class _Plain(Env):
    def __init__(self) -> None:
        self.closed = 0

    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        return StepResult(
            observation=f"{tool_name}:{arguments}", reward=0.5, done=arguments.get("stop", False)
        )

    def close(self) -> None:
        self.closed += 1


def test_env_defaults_and_context_manager() -> None:
    with _Plain() as env:
        assert env.reset() == StepResult()
        assert env.tools() == []
        assert env.evaluate([{}, {}, {}]) == [0.0, 0.0, 0.0]
    assert env.closed == 1


def test_from_env_without_tools_gives_one_generic_tool() -> None:
    tools = EnvTool.from_env(_Plain())
    assert [t.tool_name for t in tools] == ["env_action"]
    assert tools[0].tool_info()["function"]["parameters"] == {"type": "object", "properties": {}}
    assert (
        tools[0].last_result is None and tools[0].done is False and tools[0].episode_reward == 0.0
    )


def test_episode_reward_is_a_running_total_shared_by_sibling_tools() -> None:
    env = CounterEnv()
    add, echo = EnvTool.from_env(env)
    assert (add.tool_name, echo.tool_name) == ("add", "echo")
    env.reset()
    assert add("add", {"delta": 2}) == "ok"
    assert echo("echo", {"text": "hi"}) == "hi"
    assert add("add", {"delta": 5}) == "ok"
    # Last step alone would be 5.0; the running total is 7.0 and both tools see it.
    assert add.episode_reward == 7.0 and echo.episode_reward == 7.0
    assert echo.last_result is not None and echo.last_result.observation["value"] == 7
    add.reset_episode()
    assert echo.episode_reward == 0.0


def test_tool_call_text_never_shows_reward() -> None:
    (tool,) = EnvTool.from_env(_Plain())
    text = tool("anything", {"stop": True})
    assert "0.5" not in text and text.startswith("anything:")
    assert tool.done is True


def test_observation_text_rendering() -> None:
    assert to_observation_text(None) == ""
    assert to_observation_text({"text": "t", "x": 1}) == "t"
    assert to_observation_text({"value": 3}) == '{"value":3}'
