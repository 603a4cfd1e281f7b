"""The ``user_data`` column: a list of ``(key, json_string)`` pairs (Arrow-friendly, not a dict)."""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["get_user_data", "set_user_data"]


def get_user_data(row: dict[str, Any], key: str) -> Any:
    """The first value stored under ``key`` (JSON-decoded when it decodes), or None."""
    for pair in row.get("user_data") or []:
        if isinstance(pair, (list, tuple)) and len(pair) == 2 and pair[0] == key:
            value = pair[1]
            if isinstance(value, str):
                try:
                    return orjson.loads(value)
                except orjson.JSONDecodeError:
                    return value
            return value
    return None


def set_user_data(row: dict[str, Any], values: dict[str, Any]) -> list[list[str]]:
    """A new user_data list: entries for ``values``' keys replaced by JSON-encoded ones."""
    kept = [list(p) for p in row.get("user_data") or []
            if isinstance(p, (list, tuple)) and len(p) == 2 and p[0] not in values]
    for key, value in values.items():
        kept.append([key, orjson.dumps(value, default=str).decode()])
    return kept
