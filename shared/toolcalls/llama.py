"""Llama 3.x JSON calls: ``{"name": ..., "parameters": {...}}``, optionally after ``<|python_tag|>``.

Only a python tag or a message that *is* JSON counts as a call, so JSON examples
inside prose are never mistaken for calls.
"""

from __future__ import annotations

from shared.toolcalls._json import decode_at, fields_from_object
from shared.toolcalls.models import CallStatus, Extraction, ParsedCall

__all__ = ["PYTHON_TAG", "parse_llama_json"]

FAMILY = "llama3_json"
PYTHON_TAG = "<|python_tag|>"


def _skip_separators(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in " \t\r\n;":
        pos += 1
    return pos


def _region_start(text: str) -> tuple[int, list[tuple[int, int]]]:
    tag = text.find(PYTHON_TAG)
    if tag != -1:
        return tag + len(PYTHON_TAG), [(tag, tag + len(PYTHON_TAG))]
    first = _skip_separators(text, 0)
    return (first, []) if text.startswith("{", first) else (-1, [])


def _one_call(text: str, pos: int) -> ParsedCall:
    value, end, error, truncated = decode_at(text, pos)
    if error is not None:
        status: CallStatus = "unclosed" if truncated else "invalid_json"
        return ParsedCall(status=status, raw=text[pos:], start=pos, end=len(text),
                          family=FAMILY, error=error)
    status, name, args, err = fields_from_object(value)
    return ParsedCall(status=status, name=name, arguments=args, raw=text[pos:end],
                      start=pos, end=end, family=FAMILY, error=err)


def parse_llama_json(text: str) -> Extraction:
    """JSON call objects separated by ``;`` or whitespace; stops at the first non-JSON text."""
    pos, consumed = _region_start(text)
    calls: list[ParsedCall] = []
    if pos == -1:
        return Extraction(calls=calls, consumed=consumed)
    while True:
        pos = _skip_separators(text, pos)
        if pos >= len(text) or text[pos] != "{":
            break
        call = _one_call(text, pos)
        calls.append(call)
        pos = call.end
    if calls:
        # The separators between calls belong to the call block, not to the content.
        consumed.append((calls[0].start, calls[-1].end))
    return Extraction(calls=calls, consumed=consumed)
