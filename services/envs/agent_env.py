"""Gym-style view of an Env for agent loops: reset(seed) → messages, step(action) → 5-tuple.

An action is an assistant message. Structured ``tool_calls`` run as given; a
text reply is first parsed with the suite's tool-call parser (``tool_parser``,
one model family or ``auto``), so text holding a call (``<tool_call>...``,
pythonic, ...) runs that call rather than ending the episode. A call that
cannot be parsed gets an error observation naming its parse status, and the
episode goes on; only text with no attempted call is a final answer.
"""

from __future__ import annotations

from typing import Any

import orjson

from services.envs.base import Env, to_observation_text
from shared.schema import AgentTask, Message, StepResult, ToolCall
from shared.toolcalls import parse_tool_calls

__all__ = ["AgentEnv"]


class AgentEnv:
    """Wraps an Env and a task list; an action is an assistant message (tool calls or text)."""

    def __init__(
        self,
        env: Env,
        tasks: list[AgentTask] | None = None,
        *,
        max_steps: int = 8,
        final_tool: str | None = None,
        tool_parser: str = "auto",
    ) -> None:
        self.env = env
        self.tool_parser = tool_parser
        # A text-only reply ends the episode; envs that grade it name their final tool here.
        self.final_tool = final_tool
        self.tasks = list(tasks or [])
        self.max_steps = max_steps
        self.steps = 0
        self.sample_id = ""

    def reset(self, seed: int | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Start an episode; return the opening messages and {"tools", "sample_id"}."""
        task = self.tasks[(seed or 0) % len(self.tasks)] if self.tasks else None
        self.sample_id = task.id if task else f"seed-{seed or 0}"
        self.steps = 0
        first = self.env.reset((task.metadata or None) if task else None, seed=seed)
        messages = list(task.messages) if task and task.messages else _opening(first)
        return messages, {"tools": self.env.tools(), "sample_id": self.sample_id}

    def step(
        self, action: dict[str, Any] | Message | str
    ) -> tuple[list[dict[str, Any]], float, bool, bool, dict[str, Any]]:
        """Apply one assistant message; return (tool messages, reward, terminated, truncated, info)."""
        msg = _as_message(action)
        self.steps += 1
        calls: list[ToolCall] = list(msg.tool_calls or [])
        errors: list[dict[str, Any]] = []
        if not calls:
            calls, errors = self._calls_in_text(to_observation_text(msg.content))
            if not calls and not errors:
                return self._finish(to_observation_text(msg.content))
        observations, reward, done, info = self._run_calls(calls) if calls else ([], 0.0, False, {})
        if errors:
            info["parse_errors"] = [e["content"] for e in errors]
        truncated = not done and self.steps >= self.max_steps
        return [*errors, *observations], reward, done, truncated, info

    def _calls_in_text(self, text: str) -> tuple[list[ToolCall], list[dict[str, Any]]]:
        """Ok calls in a text reply, and an error observation for each call that did not parse."""
        parsed = parse_tool_calls(text, family=self.tool_parser, tools=self.env.tools() or None)
        calls = parsed.to_tool_calls(lambda i: f"call_{self.steps}_{i}")
        errors = [{"role": "tool", "tool_call_id": f"call_{self.steps}_bad{i}",
                   "content": f"Error: tool call not run ({c.status}): {c.error or c.raw[:200]}"}
                  for i, c in enumerate(parsed.calls) if not c.ok]
        return calls, errors

    def _finish(self, text: str) -> tuple[list[dict[str, Any]], float, bool, bool, dict[str, Any]]:
        if self.final_tool is None:
            return [], 0.0, True, False, {"final": text}
        result = self.env.step(self.final_tool, {"content": text})
        return [], float(result.reward), True, False, dict(result.info)

    def _run_calls(
        self, calls: list[Any]
    ) -> tuple[list[dict[str, Any]], float, bool, dict[str, Any]]:
        out: list[dict[str, Any]] = []
        reward, done, info = 0.0, False, {}
        for call in calls:
            result = self.env.step(call.function.name, _arguments(call.function.arguments))
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": to_observation_text(result.observation),
                }
            )
            reward += float(result.reward)
            info.update(result.info)
            if result.done:
                done = True
                break
        return out, reward, done, info


def _opening(first: StepResult) -> list[dict[str, Any]]:
    messages = first.info.get("messages")
    if isinstance(messages, list):
        return list(messages)
    return [{"role": "user", "content": to_observation_text(first.observation)}]


def _as_message(action: dict[str, Any] | Message | str) -> Message:
    if isinstance(action, Message):
        return action
    if isinstance(action, str):
        return Message(role="assistant", content=action)
    return Message.model_validate({"role": "assistant", **action})


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = orjson.loads(raw or "{}")
    except orjson.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
