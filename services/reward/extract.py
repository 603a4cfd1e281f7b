"""Read what the model did in its final turn: the calls it attempted and its decision (R1, R2)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from shared.schema import Message, Trajectory, content_text
from shared.schema.functions import ROLLOUT_ERROR_PREFIX
from shared.toolcalls import normalise_arguments, parse_tool_calls

__all__ = ["Decision", "ModelTurn", "PredictedCall", "ROLLOUT_ERROR_PREFIX", "read_model_turn"]

Decision = Literal["tool_call", "clarify", "confirm", "no_tool", "invalid"]
_PREFIXES: tuple[tuple[str, Decision], ...] = (
    ("CLARIFY:", "clarify"), ("CONFIRM:", "confirm"), ("NO_TOOL:", "no_tool"))


class PredictedCall(BaseModel):
    """One attempted call: its name if readable, its arguments if they are a JSON object."""

    name: str | None = None
    arguments: dict[str, Any] | None = None
    status: str = "ok"

    @property
    def well_formed(self) -> bool:
        """True when name and object arguments were both read."""
        return self.name is not None and self.arguments is not None


class ModelTurn(BaseModel):
    """The extraction window read once: calls, decision, first content, error flags."""

    calls: list[PredictedCall]
    decision: Decision
    content: str = ""
    rollout_error: bool = False
    has_assistant: bool = False


def _window(messages: list[Message]) -> list[Message]:
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    return [m for m in messages[last_user + 1 :] if m.role == "assistant"]


def _structured(message: Message) -> list[PredictedCall]:
    calls = []
    for tc in message.tool_calls or []:
        status, args, _ = normalise_arguments(tc.function.arguments)
        calls.append(PredictedCall(name=tc.function.name or None, arguments=args, status=status))
    return calls


def _from_text(text: str, family: str, tools: Any) -> tuple[list[PredictedCall], str]:
    parsed = parse_tool_calls(text, family=family, tools=tools or None)
    calls = [PredictedCall(name=c.name, arguments=c.arguments if c.status in ("ok", "unknown_tool") else None,
                           status=c.status) for c in parsed.calls]
    return calls, parsed.content


def _decide(calls: list[PredictedCall], content: str) -> Decision:
    if calls:
        return "tool_call"
    text = content.lstrip()
    return next((d for prefix, d in _PREFIXES if text.startswith(prefix)), "invalid")


def read_model_turn(traj: Trajectory, *, family: str = "auto") -> ModelTurn:
    """Calls and decision from all assistant messages after the last user message."""
    window = _window(traj.messages)
    calls: list[PredictedCall] = []
    first_content = ""
    rollout_error = False
    for message in window:
        text = content_text(message.content)
        rollout_error = rollout_error or text.lstrip().startswith(ROLLOUT_ERROR_PREFIX)
        found = _structured(message)
        content = text
        if not found and text:
            found, content = _from_text(text, family, traj.tools)
        elif text:
            content = parse_tool_calls(text, family=family).content
        calls.extend(found)
        first_content = first_content or content.strip()
    return ModelTurn(calls=calls, decision=_decide(calls, first_content), content=first_content,
                     rollout_error=rollout_error, has_assistant=bool(window))
