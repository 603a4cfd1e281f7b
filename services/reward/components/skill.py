"""The scorers a skill's ``reward_weights`` name, read off a finished trajectory.

``tool_accuracy``, ``answer_f1`` and ``reasoning_quality`` run the shared
scorers (``shared.skills.scoring``) that the skill env runs, on what the
trajectory holds:

- the episode's tool calls: every assistant message's calls (structured, or
  parsed from its text) except ``submit_answer``, each paired with its tool
  message (``ok`` unless that message starts with ``Error``);
- the answer: the ``submit_answer`` call's arguments, else the JSON object of
  the final reply;
- the reasoning: ``reasoning_content`` and ``<think>`` blocks of every
  assistant message, plus the text written next to a tool call (a thought
  before an action); the final answer itself is not reasoning.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from services.reward.components.answer import extract_answer, final_text, token_f1
from services.reward.registry import ComponentResult, ParamsModel, reward_component
from shared.schema import Message, Trajectory, content_text
from shared.skills import (
    CallRecord,
    answer_fields_from_text,
    answer_truth,
    field_f1,
    tool_accuracy,
)
from shared.toolcalls import normalise_arguments, parse_tool_calls
from shared.toolcalls.reasoning import mask_spans, reasoning_spans, reasoning_text

__all__ = ["SUBMIT_TOOL", "Episode", "read_episode"]

SUBMIT_TOOL = "submit_answer"


class Episode(BaseModel):
    """What a skill scorer reads from a trajectory."""

    calls: list[CallRecord] = Field(default_factory=list)
    answer: dict[str, Any] = Field(default_factory=dict)
    reasoning: str = ""
    observations: list[str] = Field(default_factory=list)


_Found = list[tuple[str | None, str, dict[str, Any] | None]]


def _calls_of(message: Message, family: str, tools: Any) -> tuple[_Found, str]:
    """(call id, name, arguments or None) of one assistant message, and its text without call markup."""
    text = content_text(message.content)
    if message.tool_calls:
        out: _Found = []
        for tc in message.tool_calls:
            _, args, _ = normalise_arguments(tc.function.arguments)
            out.append((tc.id, tc.function.name or "", args))
        return out, text
    if not text:
        return [], ""
    parsed = parse_tool_calls(text, family=family, tools=tools or None)
    calls: _Found = [(None, c.name or "", c.arguments if c.status in ("ok", "unknown_tool") else None)
                     for c in parsed.calls]
    return calls, parsed.content if calls else text


def _thought(message: Message, text: str, *, has_calls: bool) -> str:
    spans = reasoning_spans(text)
    parts = [message.reasoning_content or "", reasoning_text(text, spans) or ""]
    if has_calls:
        parts.append(mask_spans(text, spans).strip())
    return "\n".join(p for p in parts if p.strip())


def _pair_results(traj: Trajectory, calls: list[tuple[str | None, CallRecord]], skip: set[str]) -> list[str]:
    """Mark each call ok / failed from its tool message (by id, else in order); return the observations."""
    by_id = {cid: rec for cid, rec in calls if cid}
    waiting = [rec for _, rec in calls]
    observations = []
    for message in traj.messages:
        if message.role != "tool":
            continue
        if message.tool_call_id in skip:
            continue  # the answer's own receipt is not an observation
        text = content_text(message.content)
        observations.append(text)
        record = by_id.get(message.tool_call_id or "") or next((r for r in waiting if r.ok is None), None)
        if record is not None and record in waiting:
            record.ok = not text.lstrip().startswith("Error")
            waiting.remove(record)
    return observations


def read_episode(traj: Trajectory, *, family: str = "auto") -> Episode:
    """Calls with outcomes, the answer, the reasoning and the observations of a trajectory."""
    ep = Episode()
    calls: list[tuple[str | None, CallRecord]] = []
    submit_ids: set[str] = set()
    thoughts = []
    for message in traj.messages:
        if message.role != "assistant":
            continue
        found, text = _calls_of(message, family, traj.tools)
        thoughts.append(_thought(message, text, has_calls=bool(found)))
        for call_id, name, args in found:
            if name == SUBMIT_TOOL:
                ep.answer = dict(args or {})
                submit_ids.update([call_id] if call_id else [])
            else:
                calls.append((call_id, CallRecord(name=name, arguments=args)))
    ep.observations = _pair_results(traj, calls, submit_ids)
    ep.calls = [rec for _, rec in calls]
    if not ep.answer:
        ep.answer = answer_fields_from_text(final_text(traj))
    reasoning = ep.answer.pop("reasoning", None)
    ep.reasoning = "\n".join(t for t in [*thoughts, str(reasoning or "")] if t.strip())
    return ep


def _tool_names(traj: Trajectory) -> list[str] | None:
    names = [t.function.name for t in traj.tools if t.function.name != SUBMIT_TOOL]
    return names or None


class ToolAccuracyParams(ParamsModel):
    """Params of ``tool_accuracy``."""

    available_tools: list[str] | None = None
    family: str = "auto"


@reward_component(name="tool_accuracy", version="1", params=ToolAccuracyParams)
def tool_accuracy_component(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    """Tool-call correctness over the episode (F1 against ``ground_truth.tool_calls`` when given)."""
    p = ToolAccuracyParams.model_validate(params)
    ep = read_episode(traj, family=p.family)
    expected = ground_truth.get("tool_calls")
    schemas = {t.function.name: t.function.parameters or {} for t in traj.tools}
    result = tool_accuracy(ep.calls, available_tools=p.available_tools or _tool_names(traj), schemas=schemas,
                           expected=expected if isinstance(expected, list) else None)
    metrics = {"calls": float(result.calls), "correct_calls": float(result.correct)}
    if result.matched is not None:
        metrics["matched_calls"] = float(result.matched)
    return ComponentResult(score=result.score, metrics=metrics, info={"problems": result.problems})


class AnswerF1Params(ParamsModel):
    """Params of ``answer_f1``."""

    required_fields: list[str] = Field(default_factory=list)
    answer_format: dict[str, list[str]] = Field(default_factory=dict)
    family: str = "auto"


@reward_component(name="answer_f1", version="1", params=AnswerF1Params)
def answer_f1_component(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    """Field-level F1 of the answer against the ground-truth fields (token F1 for a text answer)."""
    p = AnswerF1Params.model_validate(params)
    fields = p.required_fields or list(p.answer_format.get("required_fields") or [])
    truth = answer_truth(ground_truth, fields)
    if not truth and isinstance(ground_truth.get("answer"), str):
        # A plain-text ground truth has no fields: its token F1 is the nearest field-free measure.
        score = token_f1(extract_answer(final_text(traj)), str(ground_truth["answer"]))
        return ComponentResult(score=score, metrics={"token_f1": score})
    result = field_f1(read_episode(traj, family=p.family).answer, truth, fields=fields or None)
    return ComponentResult(score=result.f1, metrics={"precision": result.precision, "recall": result.recall},
                           info={"correct_fields": result.correct})
