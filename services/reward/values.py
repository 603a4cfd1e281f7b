"""Schema-typed value matching (reference rule R7) with ground-truth markers.

Markers in ground-truth arguments: ``{"$any_of": [v1, v2]}`` (any one matches),
``{"$optional": v}`` (may be omitted; if present must match ``v``) and
``{"$unordered": [...]}`` (a set-like array). No coercion: ``"5"`` never equals 5.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from typing import Any

__all__ = ["is_optional", "json_type_fits", "normalise_text", "strip_optional", "values_match"]

Schema = dict[str, Any]


@lru_cache(maxsize=8192)
def normalise_text(value: str) -> str:
    """NFKC, casefold, trim, collapse internal whitespace (no punctuation stripping)."""
    return " ".join(unicodedata.normalize("NFKC", value).casefold().split())


def is_optional(gt: Any) -> bool:
    """True when a ground-truth value is wrapped in ``$optional``."""
    return isinstance(gt, dict) and set(gt) == {"$optional"}


def strip_optional(gt: Any) -> Any:
    """The value inside an ``$optional`` marker (or the value itself)."""
    return gt["$optional"] if is_optional(gt) else gt


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "integer": lambda v: _is_number(v) and float(v).is_integer(),
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def json_type_fits(value: Any, kind: str | None) -> bool:
    """True when the value is of the JSON-schema type (integral floats fit ``integer``)."""
    check = _TYPE_CHECKS.get(kind or "")
    return True if check is None else check(value)


def _infer_kind(gt: Any) -> str | None:
    if isinstance(gt, bool):
        return "boolean"
    if isinstance(gt, int):
        return "integer"
    if isinstance(gt, float):
        return "number"
    return {str: "string", list: "array", dict: "object", type(None): "null"}.get(type(gt))


def _scalar_match(pred: Any, gt: Any, kind: str | None) -> bool:
    if gt is None or pred is None:
        return pred is None and gt is None
    if kind in ("integer", "number"):
        if not (_is_number(pred) and _is_number(gt)):
            return False
        if kind == "integer":
            return float(pred).is_integer() and float(pred) == float(gt)
        return math.isclose(float(pred), float(gt), rel_tol=1e-6, abs_tol=1e-12)
    if kind == "boolean":
        return isinstance(pred, bool) and isinstance(gt, bool) and pred == gt
    if kind == "string":
        return isinstance(pred, str) and isinstance(gt, str) and normalise_text(pred) == normalise_text(gt)
    return bool(pred == gt) and type(pred) is type(gt)


def _unordered_match(pred: Any, gt_items: list[Any], item_schema: Schema | None) -> bool:
    if not isinstance(pred, list) or len(pred) != len(gt_items):
        return False
    # Bipartite matching by augmenting paths: exact for duplicates, small for argument lists.
    owner: dict[int, int] = {}

    def place(g: int, seen: set[int]) -> bool:
        """Find ground-truth item g a predicted item, moving earlier owners if needed."""
        for p, value in enumerate(pred):
            if p in seen or not values_match(value, gt_items[g], item_schema):
                continue
            seen.add(p)
            if p not in owner or place(owner[p], seen):
                owner[p] = g
                return True
        return False

    return all(place(g, set()) for g in range(len(gt_items)))


def _object_match(pred: Any, gt: dict[str, Any], schema: Schema | None) -> bool:
    if not isinstance(pred, dict):
        return False
    props = (schema or {}).get("properties") or {}
    required = {k for k, v in gt.items() if not is_optional(v)}
    if not required <= set(pred) or not set(pred) <= set(gt):
        return False
    return all(values_match(pred[k], strip_optional(gt[k]), props.get(k)) for k in pred)


def _union_match(pred: Any, gt: Any, kind: str) -> bool:
    if kind == "string" and isinstance(pred, str) and not isinstance(gt, (str, list, dict)):
        text = "null" if gt is None else str(gt).lower() if isinstance(gt, bool) else str(gt)
        return normalise_text(pred) == normalise_text(text)
    return _scalar_match(pred, gt, kind) if json_type_fits(pred, kind) else False


def values_match(pred: Any, gt: Any, schema: Schema | None = None) -> bool:
    """True when the predicted value matches the ground truth under the schema's type."""
    if isinstance(gt, dict) and set(gt) == {"$any_of"}:
        return any(values_match(pred, option, schema) for option in gt["$any_of"])
    gt = strip_optional(gt)
    items = (schema or {}).get("items")
    if isinstance(gt, dict) and set(gt) == {"$unordered"}:
        return _unordered_match(pred, list(gt["$unordered"]), items)
    kind = (schema or {}).get("type") or _infer_kind(gt)
    if isinstance(kind, str) and not isinstance(gt, (list, dict)) and not json_type_fits(gt, kind):
        # The ground truth contradicts its schema (seen in real data): trust the ground truth's type.
        kind = _infer_kind(gt)
    if isinstance(kind, list):
        # A union type is the schema saying a value may arrive as any of these types.
        return any(_union_match(pred, gt, k) for k in kind)
    if isinstance(gt, list):
        return isinstance(pred, list) and len(pred) == len(gt) and all(
            values_match(p, g, items) for p, g in zip(pred, gt))
    if isinstance(gt, dict):
        return _object_match(pred, gt, schema)
    return _scalar_match(pred, gt, kind)
