"""OpenEnv wire format: frames, error codes and the mapping between actions and tool calls.

Frames are text JSON objects ``{"type": ..., "data": ...}``. The observation
payload keeps the reference shape (``observation``, ``reward``, ``done``) and
adds ``info`` beside it, where stock clients ignore it but nothing is lost.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from services.envs.arg_check import Check, compile_check
from services.envs.base import Env
from shared.schema import StepResult

__all__ = [
    "ActionError",
    "Envelope",
    "ResetData",
    "StepAction",
    "ToolValidators",
    "WSErrorCode",
    "action_to_call",
    "error_frame",
    "observation_frame",
    "parse_result",
    "result_payload",
    "state_frame",
]


class WSErrorCode(StrEnum):
    """Error codes of the OpenEnv ``error`` frame."""

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    FACTORY_ERROR = "FACTORY_ERROR"
    SESSION_ERROR = "SESSION_ERROR"


class Envelope(BaseModel):
    """A client message: its type and optional data; unknown top-level keys are refused."""

    model_config = ConfigDict(extra="forbid")

    type: str
    data: dict[str, Any] | None = None


class ResetData(BaseModel):
    """Reset parameters; extra keys travel on as the trajectory/options of ``Env.reset``."""

    model_config = ConfigDict(extra="allow")

    seed: int | None = Field(None, ge=0)
    episode_id: str | None = Field(None, max_length=255)


class StepAction(BaseModel):
    """The tool-call form of an action: a tool name and its arguments."""

    model_config = ConfigDict(extra="forbid")

    tool_name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)


class ActionError(ValueError):
    """An action that maps to no tool call; carries pydantic-style error dicts."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__("Invalid action")
        self.errors = errors


def action_to_call(env: Env, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Map ``step.data`` to (tool_name, arguments): the tool-call form, or fields of the default tool."""
    if "tool_name" in data:
        try:
            act = StepAction.model_validate(data)
        except ValidationError as exc:
            raise ActionError(_plain_errors(exc)) from None
        return act.tool_name, act.arguments
    if env.default_tool is None:
        err = {"type": "missing", "loc": ["tool_name"], "msg": "Field required", "input": data}
        raise ActionError([err])
    return env.default_tool, {k: v for k, v in data.items() if k != "metadata"}


class ToolValidators:
    """JSON-Schema checks of tool arguments against the env's own tool schemas, compiled once."""

    def __init__(self, env: Env) -> None:
        self._checks: dict[str, Check] = {}
        for tool in env.tools():
            fn = tool.get("function", tool)
            if fn.get("name") and fn.get("parameters"):
                self._checks[str(fn["name"])] = compile_check(fn["parameters"])

    def check(self, tool_name: str, arguments: dict[str, Any]) -> None:
        """Raise ActionError if the arguments break the tool's schema (unknown tools pass)."""
        check = self._checks.get(tool_name)
        if check is None:
            return
        errors = check(arguments)
        if errors:
            raise ActionError(errors)


def _plain_errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [{k: e[k] for k in ("type", "loc", "msg", "input") if k in e} for e in exc.errors()]


def _wire_observation(observation: Any) -> dict[str, Any]:
    if isinstance(observation, dict):
        return observation
    return {"text": "" if observation is None else str(observation)}


def result_payload(result: StepResult) -> dict[str, Any]:
    """The ``data`` of an observation frame for a StepResult."""
    return {
        "observation": _wire_observation(result.observation),
        "reward": result.reward,
        "done": result.done,
        "info": result.info,
    }


def observation_frame(result: StepResult) -> str:
    """An ``observation`` frame."""
    return _dump({"type": "observation", "data": result_payload(result)})


def state_frame(state: dict[str, Any]) -> str:
    """A ``state`` frame."""
    return _dump({"type": "state", "data": state})


def error_frame(code: WSErrorCode, message: str, **extra: Any) -> str:
    """An ``error`` frame with its code and any extra fields."""
    return _dump({"type": "error", "data": {"message": message, "code": code.value, **extra}})


def parse_result(data: dict[str, Any]) -> StepResult:
    """A StepResult from an observation frame's data (a null reward reads as 0.0)."""
    return StepResult(
        observation=data.get("observation"),
        reward=float(data.get("reward") or 0.0),
        done=bool(data.get("done", False)),
        info=dict(data.get("info") or {}),
    )


def _dump(obj: dict[str, Any]) -> str:
    return orjson.dumps(obj, default=str).decode()
