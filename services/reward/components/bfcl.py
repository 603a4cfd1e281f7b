"""BFCL's AST checker verdict (reference §a), reproduced rule for rule.

All-or-nothing and deliberately strict: exact Python types (only int→float for
Python), BFCL string standardisation, ``""`` meaning "may be omitted", greedy
order-free matching of parallel calls. Kept separate from the graded scorer so
that its known false negatives never leak into training rewards.
"""

from __future__ import annotations

import re
from typing import Any, cast

from pydantic import BaseModel

from services.reward.extract import PredictedCall, read_model_turn
from services.reward.registry import ComponentResult, reward_component
from shared.schema import Trajectory

__all__ = ["BfclVerdict", "bfcl_verdict", "check_calls", "check_single", "standardise"]

_NONE_GIVEN = object()
_STRIP = re.compile(r"[ ,./\-_*^]")
_SCHEMA_TYPES: dict[str, type | None] = {
    "integer": int, "number": float, "string": str, "boolean": bool, "array": list, "object": dict,
    "dict": dict, "float": float, "tuple": list, "any": None, "String": str, "Array": list,
    "ArrayList": list, "HashMap": dict, "long": int, "Boolean": bool, "char": str, "double": float,
}


class BfclVerdict(BaseModel):
    """Pass/fail with BFCL's error kind (``""`` when passed)."""

    passed: bool
    error: str = ""


def standardise(value: str) -> str:
    """BFCL string form: drop spaces and ``,./-_*^``, lowercase, ``'`` → ``"``."""
    return _STRIP.sub("", value).lower().replace("'", '"')


def _std(value: Any) -> Any:
    return standardise(value) if isinstance(value, str) else value


def _expected_type(prop: dict[str, Any]) -> type | None:
    return _SCHEMA_TYPES.get(prop.get("x-bfcl-type") or prop.get("type") or "any")


def _dict_ok(value: dict[str, Any], options: dict[str, Any]) -> bool:
    for key, item in value.items():
        if key not in options or _std(item) not in [_std(o) for o in options[key]]:
            return False
    return all(key in value or "" in opts for key, opts in options.items())


def _value_ok(value: Any, acceptable: list[Any], kind: type | None, item_kind: type | None) -> str:
    if kind is str:
        ok = standardise(value) in [standardise(a) for a in acceptable if isinstance(a, str)]
    elif kind is list and item_kind is dict:
        ok = any(isinstance(a, list) and len(a) == len(value) and all(
            isinstance(v, dict) and _dict_ok(v, o) for v, o in zip(value, a)) for a in acceptable)
    elif kind is list:
        ok = [_std(v) for v in value] in [[_std(x) for x in a] for a in acceptable if isinstance(a, list)]
    elif kind is dict:
        ok = any(isinstance(a, dict) and _dict_ok(value, a) for a in acceptable)
    else:
        ok = value in acceptable
    return "" if ok else "value_error"


def _item_ok(item: Any, option: list[Any], items: type) -> bool:
    inner = _answer_type(option, items)
    return type(item) is items or (inner is not None and type(item) is inner)


def _nested_ok(value: list[Any], acceptable: list[Any], items: type) -> bool:
    # Each acceptable list sets its own element type; a non-list option imposes none.
    return any(not isinstance(option, list) or all(_item_ok(v, option, items) for v in value)
               for option in acceptable)


def _type_ok(value: Any, kind: type | None, items: type | None, acceptable: list[Any]) -> str:
    if kind is None:
        return ""
    if type(value) is kind:
        if kind is list and items is not None and not _nested_ok(cast(list[Any], value), acceptable, items):
            return "type_error:nested"
        return ""
    answer_type = _answer_type(acceptable, kind)
    return "" if answer_type is not None and type(value) is answer_type else "type_error:simple"


def _answer_type(acceptable: list[Any], kind: type | None) -> type | None:
    first = next((a for a in acceptable if a != ""), _NONE_GIVEN)
    if first is _NONE_GIVEN or kind is None:
        return None
    # A ground truth whose values have another type than the schema names a variable (None included).
    return type(first) if type(first) is not kind else None


def _check_param(value: Any, prop: dict[str, Any], acceptable: list[Any], language: str) -> str:
    kind = _expected_type(prop)
    if kind is None and language == "python":
        kind = str  # BFCL maps Python "any" to str
    items = _expected_type(prop.get("items") or {}) if kind is list else None
    if isinstance(value, tuple):
        value = list(value)
    if language == "python" and kind is float and type(value) is int:
        value = float(value)
    error = _type_ok(value, kind, items, acceptable)
    if error:
        return error
    if _answer_type(acceptable, kind) is not None:
        # Variables are compared as given, without the per-type checkers.
        return "" if value in acceptable else "value_error:variable"
    return _value_ok(value, acceptable, kind, items)


def check_single(call: PredictedCall, doc: dict[str, Any], answer: dict[str, list[Any]],
                 expected_name: str, *, language: str = "python") -> BfclVerdict:
    """One model call against one possible answer, first failure wins (rules a.4 1–4)."""
    if call.name != expected_name:
        return BfclVerdict(passed=False, error="simple_function_checker:wrong_func_name")
    args = call.arguments or {}
    params = doc.get("parameters") or {}
    props = params.get("properties") or {}
    if any(req not in args for req in params.get("required") or []):
        return BfclVerdict(passed=False, error="simple_function_checker:missing_required")
    for key, value in args.items():
        if key not in props or key not in answer:
            return BfclVerdict(passed=False, error="simple_function_checker:unexpected_param")
        error = _check_param(value, props[key], answer[key], language)
        if error:
            return BfclVerdict(passed=False, error=error)
    if any(key not in args and "" not in options for key, options in answer.items()):
        return BfclVerdict(passed=False, error="simple_function_checker:missing_optional")
    return BfclVerdict(passed=True)


def _expected(gt_entry: dict[str, Any], docs: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    original, answer = next(iter(gt_entry.items()))
    converted = original.replace(".", "_")
    # Names were sent to the API with dots replaced, so the model answers with that name.
    name = converted if converted in docs else original
    return name, docs.get(name, {}), answer


def check_calls(calls: list[PredictedCall], answers: list[dict[str, Any]], docs: dict[str, dict[str, Any]],
                *, category: str, language: str = "python") -> BfclVerdict:
    """The verdict for one entry: relevance rules, decoding gate, then the category's checker."""
    well_formed = bool(calls) and all(c.well_formed for c in calls)
    if "irrelevance" in category:
        return BfclVerdict(passed=not well_formed, error="" if not well_formed else "irrelevance:called")
    if "relevance" in category:
        return BfclVerdict(passed=well_formed, error="" if well_formed else "relevance:no_call")
    if not well_formed:
        return BfclVerdict(passed=False, error="ast_decoder:decoder_failed")
    if len(calls) != len(answers):
        return BfclVerdict(passed=False, error="wrong_count")
    if "parallel" not in category:
        name, doc, answer = _expected(answers[0], docs)
        return check_single(calls[0], doc, answer, name, language=language)
    unused = list(range(len(calls)))
    for entry in answers:
        name, doc, answer = _expected(entry, docs)
        hit = next((i for i in unused if check_single(calls[i], doc, answer, name, language=language).passed), None)
        if hit is None:
            return BfclVerdict(passed=False, error="parallel_function_checker_no_order:cannot_find_match")
        unused.remove(hit)
    return BfclVerdict(passed=True)


def bfcl_verdict(traj: Trajectory, ground_truth: dict[str, Any]) -> BfclVerdict:
    """BFCL verdict of a trajectory's final turn against ``ground_truth_bfcl``."""
    docs = {t.function.name: t.function.model_dump() for t in traj.tools}
    turn = read_model_turn(traj, family=ground_truth.get("family", "auto"))
    return check_calls(turn.calls, list(ground_truth.get("ground_truth_bfcl") or []), docs,
                       category=str(ground_truth.get("category", "simple")),
                       language=str(ground_truth.get("language", "python")))


@reward_component(name="bfcl", version="1")
def bfcl_component(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    """BFCL's AST verdict as a 0/1 score (strict-parity mode)."""
    verdict = bfcl_verdict(traj, {**ground_truth, **params})
    return ComponentResult(score=float(verdict.passed), metrics={"bfcl_pass": float(verdict.passed)},
                           info={"error": verdict.error})
