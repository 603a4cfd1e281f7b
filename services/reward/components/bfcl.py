"""BFCL's AST checker verdict (reference §a), rule for rule, on Python, Java and JavaScript.

All-or-nothing and deliberately strict, as BFCL is:

- decoding: a structured call's arguments string must JSON-decode (an empty
  string does not) to an object, else the entry fails
  (``ast_decoder:decoder_failed`` / ``ast_decoder:decoder_wrong_output_format``);
- Python: exact types, only int→float for ``float``; Java and JavaScript: every
  value must be a string, read back by the parameter's original type
  (``services.reward.bfcl_types``; the type is ``x-bfcl-type`` when the doc
  keeps one);
- the "variable" escape (a possible answer of another type than the schema's),
  BFCL string standardisation, ``""`` meaning "may be omitted", one level of
  nesting, greedy order-free matching of parallel calls.

Kept separate from the graded scorer so that its known false negatives never
leak into training rewards. Where BFCL itself would crash (a type it declares
but cannot decode, a language it does not know) the verdict fails with the
reason instead.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, cast

from pydantic import BaseModel

from services.reward.bfcl_types import JAVA_TYPES, JS_TYPES, PYTHON_TYPES, UnsupportedType, decode_java, decode_js
from services.reward.errors import RewardSpecError
from services.reward.extract import PredictedCall, read_model_turn
from services.reward.registry import ComponentResult, ParamsModel, reward_component
from shared.schema import Trajectory

__all__ = ["BfclParams", "BfclVerdict", "bfcl_calls", "bfcl_verdict", "check_calls", "check_single", "standardise"]

Language = Literal["python", "java", "javascript"]
_STRIP = re.compile(r"[ ,./\-_*^]")
_NO_TYPE = object()


class BfclVerdict(BaseModel):
    """Pass/fail with BFCL's error kind (``""`` when passed)."""

    passed: bool
    error: str = ""


class _Fail(Exception):
    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def standardise(value: str) -> str:
    """BFCL string form: drop spaces and ``,./-_*^``, lowercase, ``'`` → ``"``."""
    return _STRIP.sub("", value).lower().replace("'", '"')


def _std(value: Any) -> Any:
    return standardise(value) if isinstance(value, str) else value


def _answer_type(acceptable: Any) -> Any:
    """Type of the first possible answer that is not the "may be omitted" marker."""
    for option in acceptable:
        if option != "":
            return type(option)
    return _NO_TYPE


def _type_check(value: Any, kind: type, nested: type | None, acceptable: list[Any]) -> bool:
    """True when ``value`` passes BFCL's type check; raises on failure. Returns "is a variable"."""
    gt_type = _answer_type(acceptable)
    is_variable = gt_type is not _NO_TYPE and gt_type is not kind
    if type(value) is kind:
        if nested is None:
            return is_variable
        for option in acceptable:
            # An option that is not a list imposes no element type.
            if not isinstance(option, list) or all(_item_ok(v, nested, option) for v in cast(list[Any], value)):
                return is_variable
    if gt_type is not _NO_TYPE and type(value) is gt_type:
        return True
    raise _Fail("type_error:simple")


def _item_ok(item: Any, nested: type, option: list[Any]) -> bool:
    try:
        _type_check(item, nested, None, option)
    except _Fail:
        return False
    return True


def _std_options(option: Any) -> list[Any]:
    return [_std(x) for x in option] if isinstance(option, list | str) else []


def _dict_ok(value: dict[str, Any], option: dict[str, Any]) -> bool:
    for key, item in value.items():
        if key not in option or _std(item) not in _std_options(option[key]):
            return False
    return all(key in value or "" in opts for key, opts in option.items())


def _check_value(value: Any, kind: type, nested: type | None, acceptable: list[Any]) -> None:
    if kind is dict:
        ok = any(isinstance(o, dict) and _dict_ok(value, o) for o in acceptable if o != "")
        kind_name = "value_error:dict"
    elif kind is list and nested is dict:
        ok = any(isinstance(o, list) and len(o) == len(value)
                 and all(isinstance(v, dict) and isinstance(d, dict) and _dict_ok(v, d) for v, d in zip(value, o))
                 for o in acceptable)
        kind_name = "value_error:list_dict"
    elif kind is str:
        ok = standardise(value) in [standardise(a) for a in acceptable if isinstance(a, str)]
        kind_name = "value_error:string"
    elif kind is list:
        ok = [_std(v) for v in value] in [_std_options(o) for o in acceptable]
        kind_name = "value_error:list/tuple"
    else:
        ok = value in acceptable
        kind_name = "value_error:others"
    if not ok:
        raise _Fail(kind_name)


def _original_type(prop: dict[str, Any]) -> str:
    return str(prop.get("x-bfcl-type") or prop.get("type") or "any")


def _decode(value: Any, prop: dict[str, Any], language: Language) -> tuple[Any, type, type | None]:
    """The value as BFCL reads it, its expected type and the expected element type."""
    declared = _original_type(prop)
    items = prop.get("items") if isinstance(prop.get("items"), dict) else None
    table = {"python": PYTHON_TYPES, "java": JAVA_TYPES, "javascript": JS_TYPES}[language]
    if declared not in table:
        raise _Fail(f"type_error:unknown_type:{declared}")
    kind = table[declared]
    nested_name = _original_type(items) if items is not None else None
    nested_kinds = {"python": ("array", "tuple"), "java": ("Array", "ArrayList"), "javascript": ("array",)}
    nested: type | None = None
    if declared in nested_kinds[language] and nested_name is not None:
        if nested_name not in table:
            raise _Fail(f"type_error:unknown_type:{nested_name}")
        nested = table[nested_name]
    if language != "python":
        if not isinstance(value, str):
            raise _Fail("type_error:java" if language == "java" else "type_error:js")
        decoder = decode_java if language == "java" else decode_js
        try:
            value = decoder(value, declared, nested_name if nested is not None else None)
        except UnsupportedType as exc:
            raise _Fail(f"type_error:unsupported:{exc}") from None
    if isinstance(value, tuple):
        value = list(value)
    if language == "python" and kind is float and type(value) is int:
        value = float(value)
    return value, kind, nested


def _check_param(value: Any, prop: dict[str, Any], acceptable: list[Any], language: Language) -> None:
    value, kind, nested = _decode(value, prop, language)
    if _type_check(value, kind, nested, acceptable):
        if value not in acceptable:  # a variable is compared as given, without the per-type checkers
            raise _Fail("value_error:others")
        return
    _check_value(value, kind, nested, acceptable)


def check_single(call: PredictedCall, doc: dict[str, Any], answer: dict[str, list[Any]],
                 expected_name: str, *, language: str = "python") -> BfclVerdict:
    """One model call against one possible answer, first failure wins (rules a.4 1–4)."""
    lang = _language(language)
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
        try:
            _check_param(value, props[key], list(answer[key]), lang)
        except _Fail as fail:
            return BfclVerdict(passed=False, error=fail.kind)
    if any(key not in args and "" not in options for key, options in answer.items()):
        return BfclVerdict(passed=False, error="simple_function_checker:missing_optional")
    return BfclVerdict(passed=True)


def _language(language: str) -> Language:
    if language not in ("python", "java", "javascript"):
        raise RewardSpecError(f"BFCL language must be python, java or javascript, not {language!r}",
                              param="language")
    return language  # type: ignore[return-value]


def _expected(gt_entry: dict[str, Any], docs: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    original, answer = next(iter(gt_entry.items()))
    converted = original.replace(".", "_")
    # Names were sent to the API with dots replaced, so the model answers with that name.
    name = converted if converted in docs else original
    return name, docs.get(name, {}), answer


def check_calls(calls: list[PredictedCall], answers: list[dict[str, Any]], docs: dict[str, dict[str, Any]],
                *, category: str, language: str = "python", decode_error: str = "") -> BfclVerdict:
    """The verdict for one entry: relevance rules, decoding gate, then the category's checker."""
    well_formed = not decode_error and bool(calls) and all(c.well_formed for c in calls)
    if "irrelevance" in category:
        return BfclVerdict(passed=not well_formed, error="" if not well_formed else "irrelevance:called")
    if "relevance" in category:
        return BfclVerdict(passed=well_formed, error="" if well_formed else "relevance:no_call")
    if decode_error or not well_formed:
        return BfclVerdict(passed=False, error=decode_error or "ast_decoder:decoder_failed")
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


def _window(traj: Trajectory) -> list[Any]:
    last_user = max((i for i, m in enumerate(traj.messages) if m.role == "user"), default=-1)
    return [m for m in traj.messages[last_user + 1:] if m.role == "assistant"]


def bfcl_calls(traj: Trajectory, *, family: str = "auto") -> tuple[list[PredictedCall], str]:
    """The model's calls decoded as BFCL decodes them, and the decoder error ("" when none).

    A structured call's arguments string goes through ``json.loads`` as BFCL's
    FC handler does: an empty or non-JSON string fails decoding, a non-object
    fails the output-format gate. Calls written in text use the shared parser.
    """
    structured = [tc for m in _window(traj) for tc in (m.tool_calls or [])]
    if not structured:
        return read_model_turn(traj, family=family).calls, ""
    calls = []
    for tc in structured:
        try:
            args = json.loads(tc.function.arguments)
        except ValueError:
            return [], "ast_decoder:decoder_failed"
        if not isinstance(args, dict):
            return [], "ast_decoder:decoder_wrong_output_format"
        calls.append(PredictedCall(name=tc.function.name or None, arguments=args))
    return calls, ""


def bfcl_verdict(traj: Trajectory, ground_truth: dict[str, Any]) -> BfclVerdict:
    """BFCL verdict of a trajectory's final turn against ``ground_truth_bfcl``; raises without one."""
    category = str(ground_truth.get("category", "simple"))
    answers = ground_truth.get("ground_truth_bfcl")
    relevance = "relevance" in category  # also matches "irrelevance": those need no possible answer
    if answers is None and not relevance:
        raise RewardSpecError("the ground truth has no ground_truth_bfcl (BFCL's possible answers)",
                              param="ground_truth_bfcl")
    if not isinstance(answers, list | None) or (not answers and not relevance):
        raise RewardSpecError("ground_truth_bfcl must be a non-empty list of {function: {param: [values]}}",
                              param="ground_truth_bfcl")
    docs = {t.function.name: t.function.model_dump() for t in traj.tools}
    calls, decode_error = bfcl_calls(traj, family=str(ground_truth.get("family", "auto")))
    return check_calls(calls, list(answers or []), docs, category=category,
                       language=str(ground_truth.get("language", "python")), decode_error=decode_error)


class BfclParams(ParamsModel):
    """Params of ``bfcl`` (each also readable from the ground truth; params win)."""

    family: str | None = None
    category: str | None = None
    language: Language | None = None


@reward_component(name="bfcl", version="2", params=BfclParams)
def bfcl_component(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    """BFCL's AST verdict as a 0/1 score (strict-parity mode); no possible answers is an error."""
    given = BfclParams.model_validate(params).model_dump(exclude_none=True)
    verdict = bfcl_verdict(traj, {**ground_truth, **given})
    return ComponentResult(score=float(verdict.passed), metrics={"bfcl_pass": float(verdict.passed)},
                           info={"error": verdict.error})
