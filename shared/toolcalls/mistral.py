"""Mistral calls after ``[TOOL_CALLS]``: the old JSON-array form and the newer ``name{args}`` form."""

from __future__ import annotations

from shared.toolcalls._json import decode_at, fields_from_object, normalise_arguments
from shared.toolcalls.models import CallStatus, Extraction, ParsedCall

__all__ = ["ARGS_TAG", "TOOL_CALLS", "parse_mistral"]

FAMILY = "mistral"
TOOL_CALLS = "[TOOL_CALLS]"
ARGS_TAG = "[ARGS]"


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _array_form(text: str, at: int, pos: int) -> tuple[list[ParsedCall], int]:
    value, end, error, truncated = decode_at(text, pos)
    if error is not None:
        status: CallStatus = "unclosed" if truncated else "invalid_json"
        return [ParsedCall(status=status, raw=text[at:], start=at, end=len(text),
                           family=FAMILY, error=error)], len(text)
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items:
        status, name, args, err = fields_from_object(item)
        calls.append(ParsedCall(status=status, name=name, arguments=args, raw=text[at:end],
                                start=at, end=end, family=FAMILY, error=err))
    return calls, end


def _named_form(text: str, at: int, pos: int, limit: int) -> tuple[list[ParsedCall], int]:
    brace = text.find("{", pos, limit)
    head_end = brace if brace != -1 else limit
    name = text[pos:head_end].replace(ARGS_TAG, "").strip()
    status: CallStatus
    if brace == -1:
        status = "missing_name" if not name else "unclosed"
        return [ParsedCall(status=status, name=name or None, raw=text[at:limit], start=at,
                           end=limit, family=FAMILY, error="no arguments object")], limit
    value, end, error, truncated = decode_at(text, brace, limit)
    if error is not None:
        status = "unclosed" if truncated else "invalid_json"
        return [ParsedCall(status=status, name=name or None, raw=text[at:limit], start=at,
                           end=limit, family=FAMILY, error=error)], limit
    status, args, err = normalise_arguments(value)
    if not name:
        status, args, err = "missing_name", None, "call has no name"
    return [ParsedCall(status=status, name=name or None, arguments=args, raw=text[at:end],
                       start=at, end=end, family=FAMILY, error=err)], end


def parse_mistral(text: str) -> Extraction:
    """Every ``[TOOL_CALLS]`` block in order; text before the first marker stays content."""
    calls: list[ParsedCall] = []
    at = text.find(TOOL_CALLS)
    while at != -1:
        pos = _skip_ws(text, at + len(TOOL_CALLS))
        nxt = text.find(TOOL_CALLS, pos)
        limit = nxt if nxt != -1 else len(text)
        if text.startswith("[", pos) and not text.startswith(ARGS_TAG, pos):
            found, end = _array_form(text, at, pos)
        else:
            found, end = _named_form(text, at, pos, limit)
        calls.extend(found)
        at = nxt if nxt == -1 or nxt >= end else text.find(TOOL_CALLS, end)
    return Extraction(calls=calls, consumed=[])
