from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from services.envs.arg_check import _is_flat, compile_check

FLAT = {
    "type": "object",
    "properties": {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "n": {"type": "number"},
        "b": {"type": "boolean"},
        "a": {"type": "array"},
        "o": {"type": "object"},
    },
    "required": ["s"],
    "additionalProperties": False,
}
CASES: list[dict[str, Any]] = [
    {"s": "x"},
    {"s": "x", "i": 3, "n": 1.5, "b": True, "a": [], "o": {}},
    {"s": "x", "i": 3.0},
    {"s": "x", "i": 3.5},
    {"s": "x", "i": True},
    {"s": "x", "n": False},
    {"s": 1},
    {},
    {"s": "x", "extra": 1},
    {"s": "x", "b": 0},
]


@pytest.mark.parametrize("args", CASES)
def test_flat_check_agrees_with_jsonschema(args: dict[str, Any]) -> None:
    assert _is_flat(FLAT)
    ours = compile_check(FLAT)(args)
    reference = list(Draft202012Validator(FLAT).iter_errors(args))
    assert bool(ours) == bool(reference)
    assert sorted(e["type"] for e in ours) == sorted(e.validator for e in reference)


def test_other_schemas_use_full_jsonschema() -> None:
    schema = {"type": "object", "properties": {"k": {"type": "string", "enum": ["a", "b"]}}}
    assert not _is_flat(schema)
    check = compile_check(schema)
    assert check({"k": "a"}) == []
    assert check({"k": "z"})[0]["type"] == "enum" and check({"k": "z"})[0]["loc"] == ["k"]
