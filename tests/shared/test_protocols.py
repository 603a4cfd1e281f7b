"""The structural types a service accepts from another's objects: the real objects fit them."""

from __future__ import annotations

from typing import Any

from services.envs.base import Env, EnvTool
from services.envs.routing_env import ToolRoutingEnv
from services.tools.calculator import CalculatorTool
from services.tools.manager import ToolManager
from shared.protocols import SteppableEnv, ToolManagerLike, env_tool_infos
from shared.schema import StepResult


class _NoTools(Env):
    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        return StepResult(observation=tool_name)


class _PartialSchemas(_NoTools):
    def tools(self) -> list[dict[str, Any]]:
        return [{"name": "bare"}, {"type": "function", "function": {"name": "full", "description": "d",
                                                                    "parameters": {"type": "object"}}}]


def test_the_tools_services_manager_is_a_tool_manager() -> None:
    assert isinstance(ToolManager([CalculatorTool()]), ToolManagerLike)
    assert not isinstance([ToolManager()], ToolManagerLike)


def test_the_envs_services_env_is_steppable() -> None:
    assert isinstance(ToolRoutingEnv(), SteppableEnv) and isinstance(_NoTools(), SteppableEnv)


def test_env_tool_infos_are_the_tools_env_tool_makes() -> None:
    for env in (ToolRoutingEnv(), _NoTools(), _PartialSchemas()):
        assert env_tool_infos(env.tools()) == [t.tool_info() for t in EnvTool.from_env(env)]
    assert [t["function"]["name"] for t in env_tool_infos([])] == ["env_action"]
