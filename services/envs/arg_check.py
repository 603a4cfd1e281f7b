"""Fast checks of tool arguments against their JSON Schema.

Tool schemas are nearly always a flat object of typed properties; those get a
small compiled check, because a full JSON-Schema walk on every step costs more
than the step itself for light envs. Any other schema is checked by jsonschema.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator

__all__ = ["ArgErrors", "Check", "compile_check"]

ArgErrors = list[dict[str, Any]]
Check = Callable[[dict[str, Any]], ArgErrors]

_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        isinstance(v, int) and not isinstance(v, bool) or isinstance(v, float) and v.is_integer()
    ),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}
_FLAT_KEYS = {"type", "properties", "required", "additionalProperties", "description", "title"}
_PROP_KEYS = {"type", "description", "title"}


def _is_flat(schema: dict[str, Any]) -> bool:
    if set(schema) - _FLAT_KEYS or schema.get("type", "object") != "object":
        return False
    if not isinstance(schema.get("additionalProperties", True), bool):
        return False
    props = schema.get("properties", {})
    return all(not set(p) - _PROP_KEYS and p.get("type") in _TYPES for p in props.values())


def compile_check(schema: dict[str, Any]) -> Check:
    """A function returning pydantic-style error dicts for arguments that break ``schema``."""
    if _is_flat(schema):
        return _flat_check(schema)
    validator = Draft202012Validator(schema)

    def full(arguments: dict[str, Any]) -> ArgErrors:
        return [
            _err(e.validator, list(e.absolute_path), e.message, e.instance)
            for e in validator.iter_errors(arguments)
        ]

    return full


def _flat_check(schema: dict[str, Any]) -> Check:
    types = {
        name: (p["type"], _TYPES[p["type"]]) for name, p in schema.get("properties", {}).items()
    }
    required = list(schema.get("required", []))
    closed = schema.get("additionalProperties", True) is False

    def flat(arguments: dict[str, Any]) -> ArgErrors:
        errors = [
            _err("required", [], f"{k!r} is a required property", arguments)
            for k in required
            if k not in arguments
        ]
        for key, value in arguments.items():
            kind = types.get(key)
            if kind is None:
                if closed:
                    errors.append(
                        _err("additionalProperties", [key], f"{key!r} is not allowed", value)
                    )
            elif not kind[1](value):
                errors.append(_err("type", [key], f"{value!r} is not of type {kind[0]!r}", value))
        return errors

    return flat


def _err(kind: str, loc: list[Any], msg: str, value: Any) -> dict[str, Any]:
    return {"type": kind, "loc": loc, "msg": msg, "input": value}
