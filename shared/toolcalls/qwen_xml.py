"""Qwen3-Coder XML calls: ``<tool_call><function=f><parameter=x>v</parameter></function></tool_call>``.

Parameter values are raw text; they are converted by the tool's JSON-schema type
when a schema is known, and kept as strings otherwise (never guessed).
"""

from __future__ import annotations

from typing import Any

from shared.toolcalls._json import loads_strict
from shared.toolcalls.models import CallStatus, Extraction, ParsedCall

__all__ = ["convert_value", "parse_qwen_xml"]

FAMILY = "qwen3_coder"
FUNC_OPEN = "<function="
FUNC_CLOSE = "</function>"
PARAM_OPEN = "<parameter="
PARAM_CLOSE = "</parameter>"
WRAP_OPEN = "<tool_call>"
WRAP_CLOSE = "</tool_call>"

Schemas = dict[str, dict[str, Any]]


def _strip_one_newline(value: str) -> str:
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


def convert_value(raw: str, schema: dict[str, Any] | None) -> Any:
    """Schema-typed value; a value that does not fit its type stays a string (a visible mismatch)."""
    kind = (schema or {}).get("type")
    if kind is None or kind == "string" or raw == "":
        return raw
    if raw == "null":
        return None
    if kind in ("integer", "number"):
        value, error = loads_strict(raw)
        ok = error is None and isinstance(value, (int, float)) and not isinstance(value, bool)
        return value if ok else raw
    if kind == "boolean":
        lowered = raw.strip().lower()
        return {"true": True, "false": False}.get(lowered, raw)
    if kind in ("object", "array"):
        value, error = loads_strict(raw)
        return value if error is None else raw
    return raw


def _params(body: str, props: dict[str, Any]) -> dict[str, Any]:
    args: dict[str, Any] = {}
    pos = body.find(PARAM_OPEN)
    while pos != -1:
        name_end = body.find(">", pos)
        if name_end == -1:
            break
        name = body[pos + len(PARAM_OPEN) : name_end].strip()
        nxt = body.find(PARAM_OPEN, name_end)
        close = body.find(PARAM_CLOSE, name_end, nxt if nxt != -1 else len(body))
        stop = close if close != -1 else (nxt if nxt != -1 else len(body))
        raw = _strip_one_newline(body[name_end + 1 : stop])
        args[name] = convert_value(raw, props.get(name))
        pos = nxt
    return args


def _one_function(text: str, at: int, limit: int, schemas: Schemas) -> tuple[ParsedCall, int]:
    name_end = text.find(">", at, limit)
    close = text.find(FUNC_CLOSE, at, limit)
    if name_end == -1:
        return ParsedCall(status="unclosed", raw=text[at:limit], start=at, end=limit,
                          family=FAMILY, error="function tag not closed"), limit
    name = text[at + len(FUNC_OPEN) : name_end].strip()
    end = close + len(FUNC_CLOSE) if close != -1 else limit
    body = text[name_end + 1 : close if close != -1 else limit]
    props = schemas.get(name, {}).get("properties", {}) if name else {}
    args = _params(body, props)
    status: CallStatus = "missing_name" if not name else ("unclosed" if close == -1 else "ok")
    error = {"missing_name": "function has no name", "unclosed": "no closing </function>"}.get(status)
    return ParsedCall(status=status, name=name or None, arguments=args if name else None,
                      raw=text[at:end], start=at, end=end, family=FAMILY, error=error), end


def _wrapped(text: str, at: int, schemas: Schemas) -> tuple[list[ParsedCall], int]:
    close = text.find(WRAP_CLOSE, at)
    limit = close if close != -1 else len(text)
    fn = text.find(FUNC_OPEN, at, limit)
    if fn == -1:
        end = close + len(WRAP_CLOSE) if close != -1 else limit
        status: CallStatus = "missing_name" if close != -1 else "unclosed"
        return [ParsedCall(status=status, raw=text[at:end], start=at, end=end, family=FAMILY,
                           error="no <function=...> inside <tool_call>")], end
    call, _ = _one_function(text, fn, limit, schemas)
    end = close + len(WRAP_CLOSE) if close != -1 else len(text)
    status = "unclosed" if close == -1 and call.status == "ok" else call.status
    return [call.model_copy(update={"start": at, "end": end, "raw": text[at:end],
                                    "status": status})], end


def _next(text: str, needle: str, pos: int, cached: int) -> int:
    """Reuse a previous search result while it is still ahead, keeping the scan linear."""
    if cached == -1 or cached >= pos:
        return cached
    return text.find(needle, pos)


def parse_qwen_xml(text: str, schemas: Schemas | None = None) -> Extraction:
    """Every XML function call, wrapped in ``<tool_call>`` or bare, in order."""
    schemas = schemas or {}
    calls: list[ParsedCall] = []
    pos, wrap, bare = 0, -2, -2
    while True:
        wrap = _next(text, WRAP_OPEN, pos, wrap)
        bare = _next(text, FUNC_OPEN, pos, bare)
        if wrap == -1 and bare == -1:
            break
        if wrap != -1 and (bare == -1 or wrap < bare):
            found, pos = _wrapped(text, wrap, schemas)
        else:
            nxt = text.find(FUNC_OPEN, bare + len(FUNC_OPEN))
            call, pos = _one_function(text, bare, nxt if nxt != -1 else len(text), schemas)
            found = [call]
        calls.extend(found)
    return Extraction(calls=calls, consumed=[])
