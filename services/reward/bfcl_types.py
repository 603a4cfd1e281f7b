"""BFCL's per-language argument decoding: Java and JavaScript values arrive as source-text strings.

BFCL sends Java and JavaScript function docs with every parameter retyped as
``string`` ("in string representation"), so a model answers ``"9"``,
``"1500L"``, ``"new int[]{1, 2}"`` or ``"{'method': 'GET'}"``. Before the type
check, the text is read back by the parameter's original type; text that does
not have that type's shape stays a string (and usually then fails the type
check, unless the possible answer names a variable). Python values are used as
decoded from JSON.

Types BFCL declares but never decodes (Java ``Set``, ``Hashtable``,
``Queue``, ``Stack``) make BFCL's own checker crash; here they raise
``UnsupportedType`` so the entry fails with a stated reason.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["JAVA_TYPES", "JS_TYPES", "PYTHON_TYPES", "UnsupportedType", "decode_java", "decode_js"]


class UnsupportedType(ValueError):
    """A declared type BFCL has no decoder for."""


#: Original BFCL type name → the Python type a decoded value must have.
PYTHON_TYPES: dict[str, type] = {
    "string": str, "integer": int, "float": float, "number": float, "boolean": bool, "array": list,
    "tuple": list, "dict": dict, "object": dict, "any": str,
}
JAVA_TYPES: dict[str, type] = {
    "byte": int, "short": int, "integer": int, "float": float, "double": float, "long": int, "boolean": bool,
    "char": str, "Array": list, "ArrayList": list, "Set": set, "HashMap": dict, "Hashtable": dict, "Queue": list,
    "Stack": list, "String": str, "any": str,
}
JS_TYPES: dict[str, type] = {
    "String": str, "integer": int, "float": float, "Bigint": int, "Boolean": bool, "dict": dict, "array": list,
    "any": str,
}

_INT = re.compile(r"-?\d+")
_JAVA_FLOAT = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[fF]")
_JAVA_DOUBLE = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_JAVA_LONG = re.compile(r"-?\d+[lL]")
_JS_FLOAT = re.compile(r"-?\d+(?:\.\d+)?")
_JS_BIGINT = re.compile(r"-?\d+n")


# ------------------------------------------------------------------ Java

def _java_scalar(text: str) -> Any:
    """A Java literal read without a declared type (collection elements of unknown type)."""
    if text in ("true", "false"):
        return text == "true"
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    if _JAVA_LONG.fullmatch(text):
        return int(text[:-1])
    if _JAVA_FLOAT.fullmatch(text):
        return float(text[:-1])
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _java_element(text: str, nested: str | None) -> Any:
    if nested in ("char", "String"):
        return text[1:-1]  # quotes dropped without looking at them
    return decode_java(text, nested) if nested else _java_scalar(text)


def _java_arraylist(text: str, nested: str | None) -> Any:
    as_list = re.search(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)", text)
    if as_list:
        return [_java_element(part.strip(), nested) for part in as_list.group(1).split(",")]
    adds = re.search(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", text, re.S)
    if adds:
        return [_java_element(part.strip(), nested) for part in re.findall(r"add\((.+?)\)", adds.group(1))]
    return [] if re.search(r"new\s+ArrayList<\w*>\(\)", text) else text


def _java_array(text: str, nested: str | None) -> Any:
    found = re.search(r"new\s+\w+\[\]\s*\{(.*?)\}", text)
    if not found:
        return text
    parts = [p.strip() for p in found.group(1).split(",") if p.strip()]
    # Unlike ArrayList, array elements keep their quotes even for String/char.
    return [decode_java(p, nested) if nested else _java_scalar(p) for p in parts]


def _java_hashmap(text: str) -> Any:
    body = re.search(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", text, re.S)
    if body:
        return {k: _java_scalar(v.strip()) for k, v in re.findall(r"put\(\"(.*?)\",\s*(.*?)\)", body.group(1))}
    return {} if re.search(r"new\s+HashMap<.*?>\s*\(\)", text) else text


def decode_java(text: str, kind: str, nested: str | None = None) -> Any:
    """A Java argument string read as ``kind`` (``nested``: element type of Array/ArrayList)."""
    if kind in ("byte", "short", "integer"):
        return int(text) if _INT.fullmatch(text) else text
    if kind == "float":
        return float(text[:-1]) if _JAVA_FLOAT.fullmatch(text) else text
    if kind == "double":
        return float(text) if _JAVA_DOUBLE.fullmatch(text) else text
    if kind == "long":
        return int(text[:-1]) if _JAVA_LONG.fullmatch(text) else text
    if kind == "boolean":
        return text == "true" if text in ("true", "false") else text
    if kind in ("char", "String", "any"):
        return text
    if kind == "ArrayList":
        return _java_arraylist(text, nested)
    if kind == "Array":
        return _java_array(text, nested)
    if kind == "HashMap":
        return _java_hashmap(text)
    raise UnsupportedType(f"BFCL has no decoder for Java type {kind!r}")


# ------------------------------------------------------------ JavaScript

def _js_scalar(text: str) -> Any:
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _js_2d(code: str) -> list[Any] | None:
    pattern = r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)"
    found = re.match(pattern, code)
    if not found:
        return None
    rows = []
    for i, inner in enumerate(re.findall(r"\[(.*?)\]", found.group(0))):
        inner = inner.strip()
        inner = inner[1:] if i == 0 and inner.startswith("[") else inner
        rows.append([_js_scalar(e.strip()) for e in inner.split(",")])
    return rows


def _js_array(code: str, nested: str | None) -> Any:
    rows = _js_2d(code)
    if rows is not None:
        return rows
    found = re.match(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)", code)
    if not found:
        return code
    body = (found.group(1) if found.group(1) is not None else found.group(2) or "").strip()
    parts = [p.strip() for p in body.split(",")] if body else []
    if not nested:
        return [_js_scalar(p) for p in parts]
    try:
        return [decode_js(p, nested) for p in parts]
    except (UnsupportedType, ValueError):
        return code  # an element BFCL cannot read leaves the whole value as text


def _js_dict(code: str) -> Any:
    if code == "{}":
        return {}
    found = re.match(r"\{(.*?)\}", code)
    if not found:
        return code
    out: dict[str, Any] = {}
    for key, value in re.findall(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)", found.group(1)):
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            out[key.strip().strip("'\"")] = _js_array(value, None)
        elif value.startswith("{") and value.endswith("}"):
            out[key.strip().strip("'\"")] = _js_dict(value)
        else:
            out[key.strip().strip("'\"")] = _js_scalar(value.strip("'\""))
    return out


def decode_js(text: str, kind: str, nested: str | None = None) -> Any:
    """A JavaScript argument string read as ``kind`` (``nested``: element type of ``array``)."""
    if kind not in JS_TYPES:
        raise UnsupportedType(f"BFCL has no decoder for JavaScript type {kind!r}")
    if kind == "String":
        quoted = len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'"
        return text[1:-1] if quoted else text
    if kind == "integer":
        return int(text) if _INT.fullmatch(text) else text
    if kind == "float":
        return float(text) if _JS_FLOAT.fullmatch(text) else text
    if kind == "Bigint":
        return int(text[:-1]) if _JS_BIGINT.fullmatch(text) else text
    if kind == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if kind == "dict":
        return _js_dict(text.strip())
    if kind == "array":
        return _js_array(text.strip(), nested)
    return text
