"""Row validation at the edge of the pipeline: unreadable rows become ``invalid_row`` drops."""

from __future__ import annotations

from typing import Any

from services.cleaning.base import Row
from services.cleaning.reasons import INVALID_ROW

__all__ = ["INPUT_STEP", "invalid_row", "row_problem"]

#: ``drop_step`` of rows rejected before any step ran.
INPUT_STEP = "input"

_CONTENT_TYPES = (str, list, dict, type(None))


def row_problem(value: Any) -> str | None:
    """Why a value cannot be cleaned as a row, or None if it can."""
    if not isinstance(value, dict):
        return f"row is a {type(value).__name__}, not an object"
    msgs = value.get("messages")
    if msgs is None:
        return "row has no messages"
    if not isinstance(msgs, list):
        return f"messages is a {type(msgs).__name__}, not a list"
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            return f"messages[{i}] is a {type(m).__name__}, not an object"
        if not isinstance(m.get("role"), str):
            return f"messages[{i}].role is missing or not a string"
        if not isinstance(m.get("content"), _CONTENT_TYPES):
            return f"messages[{i}].content is a {type(m['content']).__name__}"
    return None


def invalid_row(value: Any, cause: str) -> Row:
    """A dropped record for an unreadable input value, keeping the value itself."""
    base: Row = dict(value) if isinstance(value, dict) else {"value": value}
    base.update(drop_reason=INVALID_ROW, drop_step=INPUT_STEP, drop_detail=cause)
    return base
