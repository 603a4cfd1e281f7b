"""Gym-style view of an Env for agent loops: reset(seed) → messages, step(action) → 5-tuple.

Skill routing: given ``skills`` (skill specs, YAML paths or bundled names),
``reset`` loads the task, routes it to its skill (the task's ``skill`` or
``skill_name`` field or metadata key; else ``default_skill``; else the only
skill), runs a ``SkillEnv`` for that skill (its tools, ``max_rounds`` as the
step budget) and opens with the skill's system prompt followed by the task's
own messages.

An action is an assistant message. Structured ``tool_calls`` run as given; a
text reply is first parsed with the suite's tool-call parser (``tool_parser``,
one model family or ``auto``), so text holding a call (``<tool_call>...``,
pythonic, ...) runs that call rather than ending the episode. A call that
cannot be parsed gets an error observation naming its parse status, and the
episode goes on; only text with no attempted call is a final answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from services.envs.base import Env, to_observation_text
from services.envs.skill_env import SUBMIT_TOOL, SkillEnv, load_skill
from shared.errors import InvalidInput
from shared.schema import AgentTask, Message, StepResult, ToolCall, content_text
from shared.skills import SkillSpec
from shared.toolcalls import parse_tool_calls

SkillSource = SkillSpec | str | Path | dict[str, Any]

__all__ = ["AgentEnv"]


class AgentEnv:
    """Wraps an Env and a task list; an action is an assistant message (tool calls or text)."""

    def __init__(
        self,
        env: Env | None = None,
        tasks: Sequence[AgentTask] | None = None,
        *,
        max_steps: int = 8,
        final_tool: str | None = None,
        skills: Sequence[SkillSource] | Mapping[str, SkillSource] | None = None,
        default_skill: str | None = None,
        tool_handlers: Mapping[str, Callable[[dict[str, Any]], str]] | None = None,
        tool_schemas: Mapping[str, dict[str, Any]] | None = None,
        tool_parser: str = "auto",
    ) -> None:
        self.tool_parser = tool_parser
        self.skills = _skill_table(skills)
        if env is None and not self.skills:
            raise InvalidInput("AgentEnv needs an env or at least one skill", param="env")
        if default_skill is not None and default_skill not in self.skills:
            raise InvalidInput(f"default_skill {default_skill!r} is not one of the skills", param="default_skill")
        self.env: Env = env if env is not None else SkillEnv(skill=next(iter(self.skills.values())))
        # A text-only reply ends the episode; envs that grade it name their final tool here.
        self.final_tool = final_tool
        self.tasks = list(tasks or [])
        self.max_steps = self._base_steps = max_steps
        self._base = (env, final_tool)
        self.default_skill = default_skill
        self.tool_handlers = dict(tool_handlers or {})
        self.tool_schemas = dict(tool_schemas or {})
        self.skill: str | None = None
        self.steps = 0
        self.sample_id = ""

    def reset(self, seed: int | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Start an episode (load the task, route its skill); return messages and {"tools", "sample_id"}."""
        task = self.tasks[(seed or 0) % len(self.tasks)] if self.tasks else None
        self.sample_id = task.id if task else f"seed-{seed or 0}"
        self.steps = 0
        spec = self._route(task)
        first = self.env.reset(_reset_arg(task), seed=seed)
        if spec is not None:
            own = [m for m in (task.messages if task else []) if m.get("role") != "system"]
            messages = [*_opening(first), *own]
        else:
            messages = list(task.messages) if task and task.messages else _opening(first)
        info: dict[str, Any] = {"tools": self.env.tools(), "sample_id": self.sample_id}
        if spec is not None:
            info["skill"] = spec.skill_name
        return messages, info

    def _route(self, task: AgentTask | None) -> SkillSpec | None:
        """Pick the task's skill and build its env; None leaves the wrapped env in place."""
        name = _skill_name(task)
        if name is None and self.skills:
            name = self.default_skill or (next(iter(self.skills)) if len(self.skills) == 1 else None)
        if name is None or not self.skills:
            self.env, self.final_tool = self._base[0] or self.env, self._base[1]
            self.max_steps, self.skill = self._base_steps, None
            return None
        spec = self.skills.get(name)
        if spec is None:
            raise InvalidInput(f"task {self.sample_id!r} names skill {name!r}; known skills: "
                               f"{', '.join(sorted(self.skills))}", param="skill")
        self.env = SkillEnv(skill=spec, handlers=dict(self.tool_handlers), tool_schemas=dict(self.tool_schemas))
        self.final_tool, self.max_steps, self.skill = SUBMIT_TOOL, spec.max_rounds, spec.skill_name
        return spec

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
        observe = getattr(self.env, "observe_reasoning", None)
        if callable(observe) and calls:
            # The thought written next to an action is what a reasoning scorer reads.
            observe("\n".join(filter(None, [msg.reasoning_content or "", content_text(msg.content)])))
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


def _skill_table(skills: Sequence[SkillSource] | Mapping[str, SkillSource] | None) -> dict[str, SkillSpec]:
    if not skills:
        return {}
    if isinstance(skills, Mapping):
        return {str(name): load_skill(src) for name, src in skills.items()}
    specs = [load_skill(src) for src in skills]
    return {spec.skill_name: spec for spec in specs}


def _skill_name(task: AgentTask | None) -> str | None:
    if task is None:
        return None
    extra = task.model_extra or {}
    for value in (extra.get("skill"), extra.get("skill_name"), task.metadata.get("skill"),
                  task.metadata.get("skill_name")):
        if isinstance(value, str) and value:
            return value
    return None


def _reset_arg(task: AgentTask | None) -> dict[str, Any] | None:
    """What the env's reset sees: the task's metadata, with its ground truth when it has one."""
    if task is None:
        return None
    arg = dict(task.metadata)
    if task.ground_truth is not None:
        arg.setdefault("ground_truth", task.ground_truth)
    return arg or None


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
