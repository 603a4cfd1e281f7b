"""The environment seed API: ``Env`` and ``EnvTool`` (an env exposed as a model tool).

An ``Env`` is stepped by tool calls: ``step(tool_name, arguments)`` returns a
``StepResult`` whose ``observation`` is what the model sees next. Override
``reset`` to start an episode, ``step`` to act, ``tools`` to advertise OpenAI
tool schemas and ``evaluate`` to score finished trajectories.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from types import TracebackType
from typing import Any, ClassVar, Self

from shared.protocols import EpisodeLedger, env_tool_infos
from shared.schema import StepResult, to_observation_text

__all__ = ["Env", "EnvTool", "to_observation_text"]


class Env(ABC):
    """Base class of every environment: reset, step by tool call, close."""

    # Cheap, non-blocking envs are stepped on the event loop by the server;
    # the rest run in a worker thread so a slow step never stalls other sessions.
    inline_safe: ClassVar[bool] = False
    # Tool used when an OpenEnv action carries plain fields instead of a tool call.
    default_tool: ClassVar[str | None] = None
    description: ClassVar[str] = ""

    def reset(self, trajectory: Any = None, *, seed: int | None = None) -> StepResult:
        """Start an episode; override to build the first observation."""
        return StepResult()

    @abstractmethod
    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        """Apply one tool call and return what happened."""

    def tools(self) -> list[dict[str, Any]]:
        """OpenAI tool schemas this env understands (empty: one generic action)."""
        return []

    def state(self) -> dict[str, Any]:
        """Env-specific state fields reported next to episode_id and step_count."""
        return {}

    def evaluate(self, trajectories: Sequence[Any]) -> list[float]:
        """Score finished trajectories; the default gives 0.0 each."""
        return [0.0] * len(trajectories)

    def close(self) -> None:  # noqa: B027 - optional hook; most envs hold nothing to release
        """Release resources; safe to call twice."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


_DEFAULT_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


class EnvTool:
    """One env tool as a callable model tool; shares the env with its siblings."""

    def __init__(
        self,
        env: Env,
        tool_name: str = "env_action",
        description: str = "Execute an action in the environment.",
        parameters: dict[str, Any] | None = None,
        *,
        _ledger: EpisodeLedger | None = None,
    ) -> None:
        self.env = env
        self.tool_name = tool_name
        self.description = description
        self.parameters = parameters or dict(_DEFAULT_PARAMETERS)
        self._ledger = _ledger or EpisodeLedger()

    @classmethod
    def from_env(cls, env: Env) -> list[EnvTool]:
        """One EnvTool per schema of ``env.tools()`` (or one generic tool), sharing a ledger."""
        ledger = EpisodeLedger()
        functions = [info["function"] for info in env_tool_infos(env.tools())]
        return [cls(env, f["name"], f["description"], f["parameters"], _ledger=ledger) for f in functions]

    def __call__(self, tool_name: str, arguments: dict[str, Any] | None) -> str:
        """Step the env with the name the model called; return only the observation text."""
        result = self.env.step(tool_name, dict(arguments or {}))
        self._ledger.add(result)
        return to_observation_text(result.observation)

    def tool_info(self) -> dict[str, Any]:
        """The OpenAI function-tool schema."""
        return {
            "type": "function",
            "function": {
                "name": self.tool_name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def reset_episode(self) -> None:
        """Zero the shared running reward (call after ``env.reset``)."""
        self._ledger.clear()

    @property
    def last_result(self) -> StepResult | None:
        """The last StepResult of any tool on this env, or None before a step."""
        return self._ledger.last

    @property
    def done(self) -> bool:
        """True once the last step ended the episode."""
        return self._ledger.done

    @property
    def episode_reward(self) -> float:
        """Sum of every step reward since the last ``reset_episode`` (a true running total)."""
        return self._ledger.total
