"""JSON helpers shared by the family parsers: one decode attempt, arguments normalised."""

from __future__ import annotations

import json
import re
from typing import Any

from shared.toolcalls.models import CallStatus

__all__ = ["CallFields", "decode_at", "fields_from_object", "loads_strict", "normalise_arguments"]

# Matching from a position (no slice) keeps the check proportional to the whitespace seen.
_ONLY_WS_TO_END = re.compile(r"\s*\Z")

CallFields = tuple[CallStatus, str | None, dict[str, Any] | None, str | None]


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            # Python keeps the last value silently; a scorer must not guess which was meant.
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates)


def decode_at(text: str, pos: int, limit: int | None = None) -> tuple[Any, int, str | None, bool]:
    """Decode one JSON value at ``pos`` (before ``limit``): (value, end, error, truncated)."""
    if limit is not None and limit < len(text):
        # JSONDecodeError counts lines from the start of its document, so a bounded
        # window keeps repeated failures linear in the input instead of quadratic.
        value, end, error, truncated = decode_at(text[pos:limit], 0)
        return value, (end + pos if error is None else pos), error, truncated
    try:
        value, end = _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        at_end = _ONLY_WS_TO_END.match(text, exc.pos) is not None
        truncated = at_end or exc.msg.startswith("Unterminated string")
        return None, pos, exc.msg, truncated
    except (ValueError, RecursionError) as exc:
        return None, pos, str(exc) or type(exc).__name__, False
    return value, end, None, False


def loads_strict(text: str) -> tuple[Any, str | None]:
    """Strict ``json.loads`` (duplicate keys refused): (value, error)."""
    stripped = text.strip()
    value, end, error, _ = decode_at(stripped, 0)
    if error is None and end != len(stripped):
        return None, "extra data after the JSON value"
    return value, error


def normalise_arguments(value: Any) -> tuple[CallStatus, dict[str, Any] | None, str | None]:
    """Arguments as a dict: ``""``/null mean ``{}``, a JSON string is decoded once."""
    if value is None or value == "":
        return "ok", {}, None
    if isinstance(value, str):
        decoded, error = loads_strict(value)
        if error is not None:
            return "invalid_json", None, f"arguments string is not JSON: {error}"
        value = decoded
    if isinstance(value, dict):
        return "ok", value, None
    return "not_object", None, f"arguments are a {type(value).__name__}, not an object"


def fields_from_object(obj: Any) -> CallFields:
    """Status, name, arguments and error of a decoded ``{name, arguments|parameters}`` object."""
    if not isinstance(obj, dict):
        return "not_object", None, None, f"call is a {type(obj).__name__}, not an object"
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return "missing_name", None, None, "call has no name"
    raw_args = obj["arguments"] if "arguments" in obj else obj.get("parameters")
    status, args, error = normalise_arguments(raw_args)
    return status, name.strip(), args, error
