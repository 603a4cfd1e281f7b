"""Merge a session's captured calls into token-exact trajectories (pure, no I/O).

Consecutive calls join one segment only when the new prompt ids start with the
previous prompt + completion ids, token for token. The tokens between the two
(tool output, the next user turn, template glue) enter the response with loss
mask 0 and logprob ``None``; sampled tokens get mask 1 and their logprob.
Any other call starts a new segment and counts a prefix mismatch, with a cause:

- ``template_strip``: the break lies inside the previous completion and that
  completion carried reasoning (``reasoning``/``reasoning_content`` or a
  ``<think>`` block): the chat template re-rendered history without it.
- ``retokenization``: the break lies inside the previous completion, and the
  client sent that completion back with the same text (or, for completions,
  the new text prompt extends the previous prompt + text): same text, other ids.
- ``other``: the break lies inside the previous prompt (history edited or
  re-rendered), or the client changed the reply it sends back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, cast

from pydantic import BaseModel, Field

from shared.schema import Message, StopReason, TokenData, ToolInfo, Trajectory
from shared.traces.record import TraceRecord

__all__ = ["MismatchCause", "PrefixMismatch", "SessionMerge", "merge_session"]

MismatchCause = Literal["template_strip", "retokenization", "other"]


class PrefixMismatch(BaseModel):
    """A call whose prompt did not extend the previous call's prompt + completion."""

    sequence: int
    previous_sequence: int
    position: int
    cause: MismatchCause


class SessionMerge(BaseModel):
    """A session's merged segments and what could not be merged."""

    session_id: str
    segments: list[Trajectory] = Field(default_factory=list)
    mismatches: list[PrefixMismatch] = Field(default_factory=list)
    calls: int = 0
    captured_calls: int = 0
    joins: int = 0

    @property
    def prefix_checks(self) -> int:
        """How many consecutive-call pairs were checked."""
        return self.joins + len(self.mismatches)


class _Segment:
    """Token buffers of one segment under construction."""

    def __init__(self, first: TraceRecord) -> None:
        self.records = [first]
        self.prompt_ids = list(first.prompt_token_ids or [])
        self.response_ids: list[int] = []
        self.loss_mask: list[int] = []
        self.logprobs: list[float | None] = []
        self._sampled(first)

    @property
    def full(self) -> list[int]:
        """Every token of the segment so far."""
        return self.prompt_ids + self.response_ids

    def _sampled(self, record: TraceRecord) -> None:
        ids = record.completion_token_ids or []
        lps = record.logprobs if record.logprobs and len(record.logprobs) == len(ids) else None
        self.response_ids += ids
        self.loss_mask += [1] * len(ids)
        self.logprobs += list(lps) if lps is not None else [None] * len(ids)

    def extend(self, record: TraceRecord) -> None:
        """Append a call whose prompt extends this segment: glue with mask 0, then its sample."""
        glue = (record.prompt_token_ids or [])[len(self.full) :]
        self.response_ids += glue
        self.loss_mask += [0] * len(glue)
        self.logprobs += [None] * len(glue)
        self.records.append(record)
        self._sampled(record)


def _captured(records: Sequence[TraceRecord]) -> list[TraceRecord]:
    ok = [r for r in records if r.status == "ok" and r.prompt_token_ids and r.completion_token_ids is not None]
    # A client retry repeats the same prompt: keep the last answer to it.
    last: dict[tuple[int, ...], TraceRecord] = {}
    for record in sorted(ok, key=lambda r: r.sequence):
        last[tuple(record.prompt_token_ids or [])] = record
    return sorted(last.values(), key=lambda r: r.sequence)


def _first_difference(a: Sequence[int], b: Sequence[int]) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def merge_session(session_id: str, records: Sequence[TraceRecord]) -> SessionMerge:
    """Merge one session's trace records into segments, counting prefix mismatches."""
    captured = _captured(records)
    result = SessionMerge(session_id=session_id, calls=len(records), captured_calls=len(captured))
    segments: list[_Segment] = []
    for record in captured:
        current = segments[-1] if segments else None
        if current is None:
            segments.append(_Segment(record))
            continue
        full, prompt = current.full, record.prompt_token_ids or []
        if prompt[: len(full)] == full:
            current.extend(record)
            result.joins += 1
            continue
        result.mismatches.append(_mismatch(current.records[-1], record, _first_difference(full, prompt)))
        segments.append(_Segment(record))
    result.segments = [_to_trajectory(session_id, i, s) for i, s in enumerate(segments)]
    return result


def _mismatch(prev: TraceRecord, new: TraceRecord, position: int) -> PrefixMismatch:
    return PrefixMismatch(
        sequence=new.sequence,
        previous_sequence=prev.sequence,
        position=position,
        cause=mismatch_cause(prev, new, position),
    )


def _reply_message(record: TraceRecord) -> dict[str, Any]:
    choices = (record.response or {}).get("choices") or [{}]
    return choices[0].get("message") or {}


def _has_reasoning(message: dict[str, Any]) -> bool:
    content = message.get("content")
    thought = isinstance(content, str) and "<think>" in content
    return bool(message.get("reasoning") or message.get("reasoning_content") or thought)


def _same_reply(echoed: dict[str, Any], reply: dict[str, Any]) -> bool:
    def calls(m: dict[str, Any]) -> list[tuple[str, str]]:
        msg = Message.model_validate(m)
        return [(c.function.name, c.function.arguments) for c in msg.tool_calls or []]

    return (echoed.get("content") or "") == (reply.get("content") or "") and calls(echoed) == calls(reply)


def mismatch_cause(prev: TraceRecord, new: TraceRecord, position: int) -> MismatchCause:
    """Classify why ``new``'s prompt does not extend ``prev``'s prompt + completion."""
    if position < len(prev.prompt_token_ids or []):
        return "other"
    if prev.endpoint.endswith("/completions") and not prev.endpoint.endswith("/chat/completions"):
        return _completion_cause(prev, new)
    reply = _reply_message(prev)
    if _has_reasoning(reply):
        return "template_strip"
    before = prev.request.get("messages") or []
    after = new.request.get("messages") or []
    echoed = after[len(before)] if len(after) > len(before) else None
    if isinstance(echoed, dict) and echoed.get("role") == "assistant" and _same_reply(echoed, reply):
        return "retokenization"
    return "other"


def _completion_cause(prev: TraceRecord, new: TraceRecord) -> MismatchCause:
    prev_prompt, new_prompt = prev.request.get("prompt"), new.request.get("prompt")
    choices = (prev.response or {}).get("choices") or [{}]
    text = choices[0].get("text") or ""
    if isinstance(prev_prompt, str) and isinstance(new_prompt, str) and new_prompt.startswith(prev_prompt + text):
        return "retokenization"
    return "other"


def _to_trajectory(session_id: str, index: int, segment: _Segment) -> Trajectory:
    last = segment.records[-1]
    messages = list(last.request.get("messages") or [])
    reply = _reply_message(last)
    if reply:
        messages.append(reply)
    tokens = TokenData(
        prompt_ids=segment.prompt_ids,
        response_ids=segment.response_ids,
        loss_mask=segment.loss_mask,
        logprobs=segment.logprobs,
        weight_version=last.weight_version,
    )
    finish = last.finish_reason
    return Trajectory(
        id=f"{session_id}-{index}",
        messages=[Message.model_validate(m) for m in messages],
        tools=[ToolInfo.model_validate(t) for t in last.request.get("tools") or []],
        turns=len(segment.records),
        stop_reason=cast(StopReason, finish) if finish in ("stop", "length") else None,
        tokens=tokens,
        metadata={"session_id": session_id, "segment": index, "sequences": [r.sequence for r in segment.records]},
    )
