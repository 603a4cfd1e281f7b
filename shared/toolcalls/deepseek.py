"""DeepSeek V3 / R1 / V3.1 calls between ``<｜tool▁calls▁begin｜>`` and ``<｜tool▁calls▁end｜>``."""

from __future__ import annotations

from typing import Any

from shared.toolcalls._json import loads_strict, normalise_arguments
from shared.toolcalls.models import Extraction, ParsedCall

__all__ = ["CALLS_BEGIN", "CALL_BEGIN", "parse_deepseek"]

FAMILY = "deepseek"
CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
CALLS_END = "<｜tool▁calls▁end｜>"
CALL_BEGIN = "<｜tool▁call▁begin｜>"
CALL_END = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
FENCE = "```"


def _name_and_args(inner: str) -> tuple[str, str]:
    left, _, right = inner.partition(SEP)
    newline = right.find("\n")
    fence = right.find(FENCE)
    if left.strip() == "function" and newline != -1 and fence != -1:
        # V3 / R1: "function<sep>name\n```json\n{...}\n```"
        body = right[fence + len(FENCE) :]
        body = body[body.find("\n") + 1 :] if body.startswith("json") else body
        close = body.rfind(FENCE)
        return right[:newline].strip(), body[:close] if close != -1 else body
    return left.strip(), right


def _one_call(text: str, at: int, limit: int) -> ParsedCall:
    body_start = at + len(CALL_BEGIN)
    close = text.find(CALL_END, body_start, limit)
    end = close + len(CALL_END) if close != -1 else limit
    inner = text[body_start : close if close != -1 else limit]
    common: dict[str, Any] = {"raw": text[at:end], "start": at, "end": end, "family": FAMILY}
    if SEP not in inner:
        return ParsedCall(status="unclosed" if close == -1 else "missing_name",
                          error="no tool separator", **common)
    name, raw_args = _name_and_args(inner)
    if not name:
        return ParsedCall(status="missing_name", error="call has no name", **common)
    if close == -1:
        return ParsedCall(status="unclosed", name=name, error="no call end marker", **common)
    value, error = loads_strict(raw_args) if raw_args.strip() else ({}, None)
    if error is not None:
        return ParsedCall(status="invalid_json", name=name, error=error, **common)
    status, args, err = normalise_arguments(value)
    return ParsedCall(status=status, name=name, arguments=args, error=err, **common)


def parse_deepseek(text: str) -> Extraction:
    """Every call block; the outer begin/end markers are consumed but are not calls."""
    calls: list[ParsedCall] = []
    consumed: list[tuple[int, int]] = []
    for marker in (CALLS_BEGIN, CALLS_END):
        pos = text.find(marker)
        while pos != -1:
            consumed.append((pos, pos + len(marker)))
            pos = text.find(marker, pos + len(marker))
    at = text.find(CALL_BEGIN)
    outer = -2
    while at != -1:
        nxt = text.find(CALL_BEGIN, at + len(CALL_BEGIN))
        if outer != -1 and outer < at:
            # Searched again only once passed, so many calls without an end marker stay linear.
            outer = text.find(CALLS_END, at)
        limit = min(x for x in (nxt, outer, len(text)) if x != -1)
        call = _one_call(text, at, limit)
        calls.append(call)
        at = nxt
    return Extraction(calls=calls, consumed=consumed)
