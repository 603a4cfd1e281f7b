"""A trivial counter/echo env for protocol tests and benchmarks."""

from __future__ import annotations

from typing import Any, ClassVar

from services.envs.base import Env
from shared.schema import StepResult

__all__ = ["CounterEnv"]

_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add delta to the counter; the reward is delta.",
            "parameters": {
                "type": "object",
                "properties": {"delta": {"type": "integer"}},
                "required": ["delta"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "echo",
            "description": "Echo the text back.",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        },
    },
]


class CounterEnv(Env):
    """Counter that ``add`` increments (reward = delta) and ``echo`` repeats text; done at ``limit``."""

    inline_safe: ClassVar[bool] = True
    default_tool: ClassVar[str | None] = "add"
    description: ClassVar[str] = "Counter/echo env for protocol tests and benchmarks."

    def __init__(self, *, start: int = 0, limit: int | None = None) -> None:
        self.start = start
        self.limit = limit
        self.value = start

    def reset(self, trajectory: Any = None, *, seed: int | None = None) -> StepResult:
        """Set the counter to ``trajectory["start"]`` if given, else the constructor's start."""
        given = trajectory.get("start") if isinstance(trajectory, dict) else None
        self.value = int(given) if given is not None else self.start
        return StepResult(observation={"value": self.value, "text": f"seed={seed}"})

    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        """Apply ``add`` or ``echo``; anything else is an error observation."""
        if tool_name == "echo":
            text = str(arguments.get("text", ""))
            return StepResult(observation={"value": self.value, "text": text})
        if tool_name != "add":
            return StepResult(
                observation={"value": self.value, "text": f"Error: unknown tool {tool_name!r}"}
            )
        delta = int(arguments.get("delta", 0))
        self.value += delta
        done = self.limit is not None and self.value >= self.limit
        return StepResult(
            observation={"value": self.value, "text": "ok"}, reward=float(delta), done=done
        )

    def tools(self) -> list[dict[str, Any]]:
        """The ``add`` and ``echo`` schemas."""
        return [dict(t) for t in _TOOLS]

    def state(self) -> dict[str, Any]:
        """The counter value."""
        return {"value": self.value}
