"""What a service calls on another service's objects, as structural types.

A user hands a library rollout objects from other services (the seed API:
``MultiTurnRollout(..., tool_manager=ToolManager(...))``, an env to step). The
rollout service accepts them by shape, so it never imports the service that
defines them:

- ``ToolManagerLike``: a registry dispatching OpenAI tool calls (the tools
  service's ``ToolManager``, or anything shaped like it); its
  ``call_structured`` returns a ``ToolCallOutcome``.
- ``SteppableEnv``: an env stepped by tool calls (the envs service's ``Env``,
  or anything shaped like it); ``env_tool_infos`` gives the tools it is stepped
  through.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from shared.schema import StepResult, ToolInfo

__all__ = ["EpisodeLedger", "SteppableEnv", "ToolCallOutcome", "ToolManagerLike", "env_tool_infos"]


class ToolCallOutcome(Protocol):
    """One dispatched call: the text the model sees, and how it went (never an exception)."""

    @property
    def ok(self) -> bool:
        """False when the call failed (the content then says why)."""
        ...

    @property
    def content(self) -> str:
        """The model-facing text."""
        ...

    @property
    def error_kind(self) -> str | None:
        """A stable error kind (``unknown_tool``, ``invalid_json``, ...), None when ok."""
        ...


@runtime_checkable
class ToolManagerLike(Protocol):
    """A tool registry by function name that dispatches OpenAI tool calls."""

    def names(self) -> list[str]:
        """Registered tool names, in order."""
        ...

    def get(self, name: str) -> Any:
        """The tool called ``name``, or None."""
        ...

    def tool_infos(self) -> Sequence[ToolInfo]:
        """The OpenAI schema of every tool."""
        ...

    async def call_structured(self, tool_call: Any) -> ToolCallOutcome:
        """Dispatch one OpenAI tool call; a bad call or a failing tool is an outcome, not an exception."""
        ...


@runtime_checkable
class SteppableEnv(Protocol):
    """An env stepped by tool calls: reset, step, its tool schemas, close."""

    def reset(self, trajectory: Any = None, *, seed: int | None = None) -> StepResult:
        """Start an episode."""
        ...

    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        """Apply one tool call."""
        ...

    def tools(self) -> list[dict[str, Any]]:
        """OpenAI tool schemas the env understands (empty: one generic action)."""
        ...

    def close(self) -> None:
        """Release resources."""
        ...


_GENERIC_NAME = "env_action"
_GENERIC_DESCRIPTION = "Execute an action in the environment."


def env_tool_infos(schemas: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Function-tool schemas of an env whose ``tools()`` gave ``schemas``: each filled in, or one generic tool.

    The envs service's ``EnvTool.from_env`` builds its tools from these: a missing name, description
    or parameters takes the generic action's.
    """
    infos = []
    for schema in schemas or [{}]:
        fn = schema.get("function", schema)
        infos.append({"type": "function", "function": {
            "name": str(fn.get("name") or _GENERIC_NAME),
            "description": str(fn.get("description") or _GENERIC_DESCRIPTION),
            "parameters": dict(fn.get("parameters") or {"type": "object", "properties": {}}),
        }})
    return infos


class EpisodeLedger:
    """An episode's running reward and last step, shared by everything that steps one env."""

    def __init__(self) -> None:
        self.last: StepResult | None = None
        self.total = 0.0

    def add(self, result: StepResult) -> None:
        """Count one step's result."""
        self.last = result
        self.total += float(result.reward)

    def clear(self) -> None:
        """Start a new episode."""
        self.last = None
        self.total = 0.0

    @property
    def done(self) -> bool:
        """True once the last step ended the episode."""
        return bool(self.last and self.last.done)
