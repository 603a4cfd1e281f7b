"""Twinkle seed, "Tools and ToolManager" and "Envs / EnvTool": the examples as the document writes them.

trajforge names: ``twinkle_agentic.tools.base.Tool`` is ``services.tools.base.Tool``,
``twinkle_agentic.tools.tool_manager.ToolManager`` is ``services.tools.manager.ToolManager``,
``twinkle_agentic.envs.{base,env_tool}`` are ``services.envs.base``.
"""

from __future__ import annotations

from typing import Any

from services.envs.base import Env, EnvTool
from services.tools.base import Tool
from services.tools.manager import ToolManager
from shared.schema import StepResult


class SearchTool(Tool):
    def __call__(self, tool_name: str, arguments: dict[str, Any]) -> str:
        query = arguments.get("query", "")
        return f"搜索结果：{query}"

    def tool_info(self) -> dict[str, Any]:  # the documented dict form
        return {
            "type": "function",
            "function": {
                "name": "search",
                "description": "搜索网络信息。",
                "parameters": {
                    "type": "object",
                    "properties": {"query": {"type": "string", "description": "搜索查询。"}},
                    "required": ["query"],
                },
            },
        }


class CalculatorTool(Tool):
    def __call__(self, tool_name: str, arguments: dict[str, Any]) -> str:
        return str(int(arguments["a"]) + int(arguments["b"]))

    def tool_info(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": "calc", "description": "Add two integers.",
                                                 "parameters": {"type": "object", "properties": {
                                                     "a": {"type": "integer"}, "b": {"type": "integer"}}}}}


def test_tool_manager_three_ways_and_dispatch() -> None:
    search_tool, calculator_tool = SearchTool(), CalculatorTool()
    manager = ToolManager([search_tool, calculator_tool])
    assert manager.names() == ["search", "calc"]
    by_dict = ToolManager({"search": search_tool, "calc": calculator_tool})
    assert by_dict.names() == ["search", "calc"]
    manager = ToolManager()
    manager.register(search_tool)
    manager.register(calculator_tool)
    assert manager.names() == ["search", "calc"]
    assert [info.name for info in manager.tool_infos()] == ["search", "calc"]
    tool_call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "search", "arguments": '{"query": "Python 教程"}'},
    }
    result = manager(tool_call)
    assert result == "搜索结果：Python 教程"
    copy = manager.copy()
    copy.unregister("calc")
    assert copy.names() == ["search"] and manager.names() == ["search", "calc"]


def test_errors_come_back_as_strings_never_raised() -> None:
    manager = ToolManager([SearchTool(), CalculatorTool()])
    unknown = manager({"id": "1", "type": "function", "function": {"name": "nope", "arguments": "{}"}})
    bad_json = manager({"id": "2", "type": "function", "function": {"name": "calc", "arguments": "{oops"}})
    raised = manager({"id": "3", "type": "function", "function": {"name": "calc", "arguments": '{"a": 1}'}})
    assert "unknown tool 'nope'" in unknown and "search" in unknown
    assert "not valid JSON" in bad_json
    assert raised.startswith("Error:") and "KeyError" in raised


class CodeExecutionEnv(Env):
    def reset(self, trajectory: Any = None, **_: Any) -> StepResult:
        self._runs: list[str] = []
        return StepResult(observation="沙箱已就绪。")

    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        code = arguments.get("code", "")
        self._runs.append(code)
        output = "error: empty" if not code else f"ran {len(code)} chars"
        return StepResult(observation=output, reward=1.0 if "error" not in output.lower() else 0.0,
                          done=len(self._runs) >= 3, info={"runs": len(self._runs)})

    def tools(self) -> list[dict[str, Any]]:
        return [{
            "type": "function",
            "function": {
                "name": "execute_code",
                "description": "运行 Python 代码。",
                "parameters": {"type": "object", "properties": {"code": {"type": "string"}}},
            },
        }]


def test_env_tools_register_into_a_tool_manager() -> None:
    env = CodeExecutionEnv()
    env.reset()
    env_tools = EnvTool.from_env(env)
    manager = ToolManager(env_tools)
    assert manager.names() == ["execute_code"]
    call = {"id": "c", "type": "function", "function": {"name": "execute_code", "arguments": '{"code": "1+1"}'}}
    assert manager(call) == "ran 3 chars"
    assert manager({**call, "function": {"name": "execute_code", "arguments": '{"code": ""}'}}) == "error: empty"
    [tool] = env_tools
    assert tool.last_result is not None and tool.last_result.info == {"runs": 2}
    assert tool.episode_reward == 1.0 and not tool.done
    manager(call)
    assert tool.done


def test_env_tool_built_by_hand() -> None:
    my_env = CodeExecutionEnv()
    my_env.reset()
    env_tool = EnvTool(
        env=my_env,
        tool_name="execute_code",
        description="在沙箱中执行 Python 代码。",
        parameters={
            "type": "object",
            "properties": {"code": {"type": "string", "description": "要执行的 Python 代码。"}},
            "required": ["code"],
        },
    )
    manager = ToolManager([env_tool])
    assert manager.tool_infos()[0].function.description == "在沙箱中执行 Python 代码。"
    text = manager({"id": "x", "type": "function", "function": {"name": "execute_code", "arguments": '{"code": "x"}'}})
    assert text == "ran 1 chars" and env_tool.episode_reward == 1.0


class GradingEnv(CodeExecutionEnv):
    """Batch evaluation mode: scores finished trajectories."""

    def evaluate(self, trajectories: Any, **kwargs: Any) -> list[float]:
        return [1.0 if "42" in str(t["messages"][-1]["content"]) else 0.0 for t in trajectories]


def test_env_interactive_and_batch_modes() -> None:
    env = GradingEnv()
    first = env.reset({"messages": [{"role": "user", "content": "go"}]})
    assert first.observation == "沙箱已就绪。"
    result = env.step("execute_code", {"code": "print(42)"})
    while not result.done:
        result = env.step("execute_code", {"code": "pass"})
    assert result.info == {"runs": 3}
    completed_trajectories = [{"messages": [{"role": "assistant", "content": "42"}]},
                              {"messages": [{"role": "assistant", "content": "41"}]}]
    rewards = env.evaluate(completed_trajectories)
    assert rewards == [1.0, 0.0]
    env.close()
