"""BFCL parity: the ``bfcl`` component follows BFCL's AST checker on Python, Java and JavaScript rows.

Java and JavaScript values are sent as source text ("in string representation",
as BFCL prompts them): ``"9"``, ``"1500L"``, ``"new int[]{2, 7}"``,
``"{'method': 'GET'}"``. Every real Java/JavaScript row of the public data,
answered with its ground truth written that way, passes; the same answers as
raw JSON values fail as BFCL fails them. Arguments BFCL cannot decode (an empty
string) fail the entry; a missing ``ground_truth_bfcl`` is a reported error.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter

from services.reward.bfcl_types import decode_java, decode_js
from services.reward.components.bfcl import bfcl_verdict
from services.reward.errors import RewardSpecError
from services.reward.service import score_trajectory
from services.reward.spec import CheckedRewardSpec, RewardSpec, check_spec
from shared.data import load_rows
from shared.schema import Trajectory

ROWS = load_rows("bfcl_v4_single_turn.jsonl")


def _kind(prop: dict[str, Any]) -> str:
    return str(prop.get("x-bfcl-type") or prop.get("type"))


def _java_scalar(value: Any, kind: str | None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if kind == "long":
        return f"{value}L"
    if kind == "float":
        return f"{value}f"
    if isinstance(value, str):
        return f'"{value}"' if kind is None else value
    return str(value)


def java_literal(value: Any, prop: dict[str, Any]) -> str:
    """A value as Java source text for its declared BFCL type."""
    kind = _kind(prop)
    items = _kind(prop["items"]) if isinstance(prop.get("items"), dict) else None
    if isinstance(value, str):
        return value  # a variable name is written as itself
    if kind == "ArrayList":
        inner = ", ".join(f'"{v}"' if items == "String" else _java_scalar(v, None if items == "any" else items)
                          for v in value)
        return f"new ArrayList<>(Arrays.asList({inner}))"
    if kind == "Array":
        return "new int[]{" + ", ".join(_java_scalar(v, items) for v in value) + "}"
    if kind == "HashMap":
        puts = " ".join(f'put("{k}", "{v}");' for k, v in value.items())
        return f"new HashMap<String, String>() {{{{ {puts} }}}}"
    return _java_scalar(value, kind)


def js_literal(value: Any, prop: dict[str, Any]) -> str:
    """A value as JavaScript source text for its declared BFCL type."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "{" + ", ".join(f"'{k}': " + (f"'{v}'" if isinstance(v, str) else js_literal(v, {}))
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in value) + "]"
    return str(value)


def _traj(row: dict[str, Any], calls: list[dict[str, Any]] | None, *, raw_args: str | None = None) -> Trajectory:
    if not calls:
        out: dict[str, Any] = {"role": "assistant", "content": "no call"}
    else:
        out = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": c["name"], "arguments": raw_args if raw_args is not None else json.dumps(c["arguments"])}}
            for i, c in enumerate(calls)]}
    return Trajectory(messages=[*row["messages"], out], tools=row["tools"])


def _truth(row: dict[str, Any]) -> dict[str, Any]:
    return {"ground_truth_bfcl": row["ground_truth_bfcl"], "category": row["category"], "language": row["language"]}


def _as_source(row: dict[str, Any]) -> list[dict[str, Any]]:
    encode = java_literal if row["language"] == "java" else js_literal
    props = {t["function"]["name"]: t["function"]["parameters"]["properties"] for t in row["tools"]}
    return [{"name": c["name"], "arguments": {k: encode(v, props[c["name"]][k]) for k, v in c["arguments"].items()}}
            for c in row["ground_truth"]["tool_calls"]]


LANG_ROWS = [r for r in ROWS if r["language"] in ("java", "javascript") and r["ground_truth"]["tool_calls"]]


#: ``ArrayList`` of ``any`` whose possible answer mixes types (``["include_defaults", true, ...]``): BFCL reads
#: every element of an ``any`` list as text, so no answer can equal it; BFCL fails these rows too.
UNREACHABLE_IN_BFCL = {"simple_java_36", "simple_java_65"}


def test_every_java_and_javascript_row_passes_with_its_answer_as_source_text() -> None:
    failures = {r["id"]: bfcl_verdict(_traj(r, _as_source(r)), _truth(r)).error for r in LANG_ROWS}
    failures = {k: v for k, v in failures.items() if v}
    assert len(LANG_ROWS) == 70 and set(failures) == UNREACHABLE_IN_BFCL, failures
    assert set(failures.values()) == {"value_error:list/tuple"}


def test_raw_json_values_fail_as_bfcl_fails_them() -> None:
    errors = {bfcl_verdict(_traj(r, r["ground_truth"]["tool_calls"]), _truth(r)).error for r in LANG_ROWS
              if any(not isinstance(v, str) for c in r["ground_truth"]["tool_calls"] for v in c["arguments"].values())}
    assert errors == {"type_error:java", "type_error:js"}


@pytest.mark.parametrize(("text", "kind", "nested", "value"), [
    ("9", "integer", None, 9), ("1500L", "long", None, 1500), ("1500", "long", None, "1500"),
    ("3.5f", "float", None, 3.5), ("3.5", "float", None, "3.5"), ("2.5", "double", None, 2.5),
    ("true", "boolean", None, True), ("yes", "boolean", None, "yes"),
    ("new int[]{2, 7, 11}", "Array", "integer", [2, 7, 11]),
    ('new ArrayList<>(Arrays.asList("a", "b"))', "ArrayList", "String", ["a", "b"]),
    ('new HashMap<String, String>() {{ put("k", "v"); }}', "HashMap", None, {"k": "v"}),
    ("jdbcSession", "any", None, "jdbcSession"),
])
def test_java_decoding_rules(text: str, kind: str, nested: str | None, value: Any) -> None:
    assert decode_java(text, kind, nested) == value


@pytest.mark.parametrize(("text", "kind", "nested", "value"), [
    ("3", "integer", None, 3), ("3.0", "float", None, 3.0), ("3", "float", None, 3.0), ("12n", "Bigint", None, 12),
    ("'data-active'", "String", None, "data-active"), ("false", "Boolean", None, False),
    ('["completed", "failed"]', "array", "String", ["completed", "failed"]),
    ("[[1, 2], [3, 4]]", "array", "array", [[1, 2], [3, 4]]),
    ("{'method': 'GET', 'n': 2}", "dict", None, {"method": "GET", "n": 2}), ("{}", "dict", None, {}),
])
def test_javascript_decoding_rules(text: str, kind: str, nested: str | None, value: Any) -> None:
    assert decode_js(text, kind, nested) == value


def test_java_type_rules_against_a_real_row() -> None:
    row = next(r for r in ROWS if r["id"] == "simple_java_49")  # rCode: integer, responseLength: long
    def verdict(args: dict[str, Any]) -> str:
        calls = [{"name": row["ground_truth"]["tool_calls"][0]["name"], "arguments": args}]
        return bfcl_verdict(_traj(row, calls), _truth(row)).error
    assert verdict({"rCode": "404", "responseLength": "1500L"}) == ""
    assert verdict({"rCode": "404", "responseLength": "1500"}) == "type_error:simple"  # a long needs its L
    assert verdict({"rCode": 404, "responseLength": "1500L"}) == "type_error:java"
    assert verdict({"rCode": "405", "responseLength": "1500L"}) == "value_error:others"


def test_argument_strings_bfcl_cannot_decode_fail_the_entry() -> None:
    row = next(r for r in ROWS if r["category"] == "simple_python" and r["ground_truth"]["tool_calls"])
    calls = row["ground_truth"]["tool_calls"]
    assert bfcl_verdict(_traj(row, calls), _truth(row)).passed
    assert bfcl_verdict(_traj(row, calls, raw_args=""), _truth(row)).error == "ast_decoder:decoder_failed"
    assert bfcl_verdict(_traj(row, calls, raw_args="{'a': 1}"), _truth(row)).error == "ast_decoder:decoder_failed"
    double = json.dumps(json.dumps(calls[0]["arguments"]))
    assert bfcl_verdict(_traj(row, calls, raw_args=double), _truth(row)).error == \
        "ast_decoder:decoder_wrong_output_format"


def test_missing_ground_truth_bfcl_is_a_reported_error_not_zero() -> None:
    row = next(r for r in ROWS if r["category"] == "simple_python")
    traj = _traj(row, row["ground_truth"]["tool_calls"])
    with pytest.raises(RewardSpecError, match="ground_truth_bfcl"):
        bfcl_verdict(traj, {"category": "simple"})
    for spec in ({"components": [{"name": "bfcl"}]}, {"components": [{"name": "tool_call", "params": {"mode": "bfcl"}}]}):
        scored = score_trajectory(traj, RewardSpec.model_validate(spec), {"decision": "tool_call"})
        assert scored.status == "failed" and scored.score is None and "ground_truth_bfcl" in (scored.error or "")
    ok = score_trajectory(traj, RewardSpec.model_validate({"components": [{"name": "tool_call",
                                                                           "params": {"mode": "bfcl"}}]}), _truth(row))
    assert ok.status == "ok" and ok.score == 1.0
    # Irrelevance rows have no possible answers by design: no call is the pass.
    irrelevant = next(r for r in ROWS if r["category"] == "irrelevance")
    assert bfcl_verdict(_traj(irrelevant, None), {"category": "irrelevance", "ground_truth_bfcl": None}).passed


def test_tool_call_rejects_unknown_params() -> None:
    with pytest.raises(RewardSpecError, match="unknown param 'strict'"):
        check_spec(RewardSpec.model_validate(
            {"components": [{"name": "tool_call", "params": {"mode": "bfcl", "strict": 1}}]}))
    with pytest.raises(ValueError, match="mode"):  # a request's spec is checked as it is parsed
        TypeAdapter(CheckedRewardSpec).validate_python(
            {"components": [{"name": "tool_call", "params": {"mode": "bfcl_strict"}}]})
