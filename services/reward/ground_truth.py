"""Reading ground truth that arrives as an object or as JSON text (stored rows, JSONL files)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ground_truth_object"]


def ground_truth_object(value: Any, where: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the ground truth as a dict, None), or (None, why it is not one); JSON text is decoded first."""
    if value is None:
        return None, f"no ground truth in {where}"
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            return None, f"ground truth in {where} is not valid JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"ground truth in {where} must be a JSON object, not {type(value).__name__}"
    return value, None
