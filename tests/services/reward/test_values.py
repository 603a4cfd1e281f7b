"""Rule R7: schema-typed value matching and ground-truth markers."""

from __future__ import annotations

import pytest

from services.reward.values import json_type_fits, normalise_text, values_match

INT = {"type": "integer"}
NUM = {"type": "number"}


@pytest.mark.parametrize(("pred", "gt", "schema", "expected"), [
    ("5", 5, INT, False),          # no coercion of strings to numbers
    (5, "5", {"type": "string"}, False),
    (3.0, 3, INT, True),           # integral floats are integers (JSON Schema)
    (3.5, 3, INT, False),
    (True, 1, INT, False),         # booleans are not integers
    (0.1 + 0.2, 0.3, NUM, True),   # relative tolerance for numbers
    (299.99, 300, NUM, False),
    ("true", True, {"type": "boolean"}, False),
    (None, None, {"type": "string"}, True),
    ("", None, {"type": "string"}, False),
    ("  New   YORK ", "new york", {"type": "string"}, True),
    ("2025/03/01", "2025-03-01", {"type": "string"}, False),  # no BFCL punctuation stripping
    ("5", 5, {"type": ["integer", "string"]}, True),         # a union type says strings may carry it
])
def test_typed_values(pred: object, gt: object, schema: dict, expected: bool) -> None:
    assert values_match(pred, gt, schema) is expected


def test_object_key_order_is_irrelevant_but_keys_must_agree() -> None:
    schema = {"type": "object", "properties": {"theme": {"type": "string"}, "notifications": {"type": "boolean"}}}
    assert values_match({"notifications": True, "theme": "dark"}, {"theme": "dark", "notifications": True}, schema)
    assert not values_match({"theme": "dark"}, {"theme": "dark", "notifications": True}, schema)
    assert not values_match({"theme": "dark", "notifications": True, "x": 1}, {"theme": "dark", "notifications": True}, schema)


def test_arrays_are_ordered_unless_unordered_marker() -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    assert not values_match(["b", "a"], ["a", "b"], schema)
    assert values_match(["b", "a"], {"$unordered": ["a", "b"]}, schema)
    assert values_match(["a", "a", "b"], {"$unordered": ["a", "b", "a"]}, schema)
    assert not values_match(["a", "b", "b"], {"$unordered": ["a", "b", "a"]}, schema)


def test_any_of_and_optional_markers() -> None:
    assert values_match("fahrenheit", {"$any_of": ["celsius", "fahrenheit"]}, {"type": "string"})
    assert not values_match("kelvin", {"$any_of": ["celsius", "fahrenheit"]}, {"type": "string"})
    assert values_match(2, {"$optional": 2}, INT)
    schema = {"type": "object", "properties": {"a": INT, "b": INT}}
    assert values_match({"a": 1}, {"a": 1, "b": {"$optional": 2}}, schema)
    assert not values_match({"a": 1, "b": 3}, {"a": 1, "b": {"$optional": 2}}, schema)


def test_type_fit_and_text_normalisation() -> None:
    assert json_type_fits(3.0, "integer") and not json_type_fits("3", "integer")
    assert normalise_text("Ｐａｒｉｓ\tFRANCE") == "paris france"


def test_ground_truth_that_contradicts_its_schema_keeps_its_own_type() -> None:
    # A real BFCL row types "venue" as a string but its answer is a boolean.
    assert values_match(True, True, {"type": "string"})
    assert not values_match("true", True, {"type": "string"})
