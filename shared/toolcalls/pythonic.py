"""Pythonic calls: ``[f(a=1), g(b="x")]``, read with ``ast`` (never evaluated)."""

from __future__ import annotations

import ast
import re
from typing import Any

from shared.toolcalls.llama import PYTHON_TAG
from shared.toolcalls.models import CallStatus, Extraction, ParsedCall

__all__ = ["looks_pythonic", "parse_pythonic"]

FAMILY = "pythonic"
_HEAD = re.compile(r"\[\s*[A-Za-z_][\w.]*\s*\(")
_JSON_NAMES = {"true": True, "false": False, "null": None}


def looks_pythonic(text: str, pos: int = 0) -> bool:
    """True when the text at ``pos`` opens a list whose first item is a call."""
    return _HEAD.match(text, pos) is not None


def _value(node: ast.expr) -> Any:
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, ast.List):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_value(k): _value(v) for k, v in zip(node.keys, node.values) if k is not None}
    return ast.literal_eval(node)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def _char_offset(line_starts: list[int], src: str, lineno: int, col_bytes: int) -> int:
    start = line_starts[lineno - 1]
    line_end = src.find("\n", start)
    line = src[start : line_end if line_end != -1 else len(src)]
    return start + len(line.encode("utf-8")[:col_bytes].decode("utf-8", errors="ignore"))


def _call(node: ast.expr, src: str, starts: list[int], base: int) -> ParsedCall:
    s = base + _char_offset(starts, src, node.lineno, node.col_offset)
    e = base + _char_offset(starts, src, node.end_lineno or node.lineno, node.end_col_offset or 0)
    raw = src[s - base : e - base]
    common: dict[str, Any] = {"raw": raw, "start": s, "end": e, "family": FAMILY}
    name = _dotted(node.func) if isinstance(node, ast.Call) else None
    if not isinstance(node, ast.Call) or name is None:
        return ParsedCall(status="missing_name", error="list item is not a named call", **common)
    if node.args or any(k.arg is None for k in node.keywords):
        return ParsedCall(status="not_object", name=name, error="positional arguments", **common)
    try:
        args = {k.arg: _value(k.value) for k in node.keywords if k.arg is not None}
    except (ValueError, TypeError, SyntaxError, RecursionError) as exc:
        return ParsedCall(status="invalid_json", name=name, error=f"not a literal: {exc}", **common)
    return ParsedCall(status="ok", name=name, arguments=args, **common)


def _failed(src: str, base: int, exc: BaseException) -> ParsedCall:
    body = src.rstrip()
    status: CallStatus = "invalid_json" if body.endswith("]") else "unclosed"
    return ParsedCall(status=status, raw=src, start=base, end=base + len(src), family=FAMILY,
                      error=f"{type(exc).__name__}: {exc}")


def parse_pythonic(text: str) -> Extraction:
    """A message that is one list of calls (optionally after ``<|python_tag|>``)."""
    tag = text.find(PYTHON_TAG)
    base = tag + len(PYTHON_TAG) if tag != -1 else 0
    consumed = [(tag, base)] if tag != -1 else []
    lead = len(text) - len(text[base:].lstrip())
    if not looks_pythonic(text, lead):
        return Extraction(calls=[], consumed=consumed)
    src = text[lead:]
    try:
        tree = ast.parse(src.rstrip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return Extraction(calls=[_failed(src, lead, exc)], consumed=consumed)
    if not isinstance(tree.body, ast.List):
        return Extraction(calls=[_failed(src, lead, ValueError("not a list"))], consumed=consumed)
    starts = [0] + [i + 1 for i, ch in enumerate(src) if ch == "\n"]
    calls = [_call(node, src, starts, lead) for node in tree.body.elts]
    return Extraction(calls=calls, consumed=consumed + [(lead, lead + len(src.rstrip()))])
