"""Hermes / Qwen2.5 / Qwen3 calls: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``."""

from __future__ import annotations

from typing import Any

from shared.toolcalls._json import decode_at, fields_from_object, loads_strict
from shared.toolcalls.models import CallStatus, Extraction, ParsedCall

__all__ = ["CLOSE_TAG", "OPEN_TAG", "parse_hermes"]

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
FAMILY = "hermes"


def _skip_ws(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _decoded_then_closed(text: str, body_start: int, limit: int) -> tuple[ParsedCall | None, int]:
    """Try the JSON first so a close tag inside a string value cannot cut the call short."""
    value, end, error, _ = decode_at(text, body_start, limit)
    if error is not None:
        return None, -1
    after = _skip_ws(text, end)
    if not text.startswith(CLOSE_TAG, after):
        return None, end
    status, name, args, err = fields_from_object(value)
    stop = after + len(CLOSE_TAG)
    start = body_start
    return ParsedCall(status=status, name=name, arguments=args, raw="", start=start,
                      end=stop, family=FAMILY, error=err), stop


def _one_call(text: str, open_at: int, close_hint: int, next_open: int) -> ParsedCall:
    body_start = _skip_ws(text, open_at + len(OPEN_TAG))
    limit = next_open if next_open != -1 else len(text)
    call, decoded_end = _decoded_then_closed(text, body_start, limit)
    if call is not None:
        return call.model_copy(update={"start": open_at, "raw": text[open_at:call.end]})
    close = close_hint
    status: CallStatus
    name: str | None
    args: dict[str, Any] | None
    err: str | None
    if close == -1:
        status, name, args, err = "unclosed", None, None, "no closing </tool_call>"
        if decoded_end > 0:
            # The JSON is complete but the output stopped before the close tag.
            value, _, _, _ = decode_at(text, body_start, limit)
            _, name, args, _ = fields_from_object(value)
        return ParsedCall(status=status, name=name, arguments=args, raw=text[open_at:],
                          start=open_at, end=len(text), family=FAMILY, error=err)
    nested = text.find(OPEN_TAG, body_start, close)
    if nested != -1:
        # A new call starts before this one closed: this one was cut off.
        return ParsedCall(status="unclosed", raw=text[open_at:nested], start=open_at,
                          end=nested, family=FAMILY, error="next <tool_call> before </tool_call>")
    end = close + len(CLOSE_TAG)
    value, error = loads_strict(text[body_start:close])
    if error is not None:
        return ParsedCall(status="invalid_json", raw=text[open_at:end], start=open_at,
                          end=end, family=FAMILY, error=error)
    status, name, args, err = fields_from_object(value)
    return ParsedCall(status=status, name=name, arguments=args, raw=text[open_at:end],
                      start=open_at, end=end, family=FAMILY, error=err)


def parse_hermes(text: str) -> Extraction:
    """Every ``<tool_call>`` block, closed or not, in order."""
    calls: list[ParsedCall] = []
    pos = 0
    close = next_open = -2
    while True:
        open_at = text.find(OPEN_TAG, pos)
        if open_at == -1:
            break
        body = open_at + len(OPEN_TAG)
        # Positions only move forward, so reusing searches that are still ahead keeps this linear.
        if close != -1 and close < body:
            close = text.find(CLOSE_TAG, body)
        if next_open != -1 and next_open < body:
            next_open = text.find(OPEN_TAG, body)
        call = _one_call(text, open_at, close, next_open)
        calls.append(call)
        pos = call.end
    return Extraction(calls=calls, consumed=[])
