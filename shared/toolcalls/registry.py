"""Parser registry by family name, auto-detection, and the one public entry point."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from shared.toolcalls.deepseek import CALL_BEGIN, CALLS_BEGIN, parse_deepseek
from shared.toolcalls.hermes import OPEN_TAG, parse_hermes
from shared.toolcalls.llama import PYTHON_TAG, parse_llama_json
from shared.toolcalls.mistral import TOOL_CALLS, parse_mistral
from shared.toolcalls.models import Extraction, ParsedCall, ParseResult
from shared.toolcalls.pythonic import looks_pythonic, parse_pythonic
from shared.toolcalls.qwen_xml import FUNC_OPEN, parse_qwen_xml
from shared.toolcalls.reasoning import mask_spans, reasoning_spans, reasoning_text
from shared.toolcalls.text_formats import parse_cline_xml, parse_react, parse_vcp

__all__ = ["FAMILIES", "UnknownFamily", "detect_family", "family_names", "parse_tool_calls", "tool_schemas"]

Schemas = dict[str, dict[str, Any]]
FamilyParser = Callable[[str, Schemas], Extraction]


class UnknownFamily(ValueError):
    """Raised for a family name that no parser is registered under."""


FAMILIES: dict[str, FamilyParser] = {
    "hermes": lambda text, _s: parse_hermes(text),
    "qwen3_coder": parse_qwen_xml,
    "llama3_json": lambda text, _s: parse_llama_json(text),
    "pythonic": lambda text, _s: parse_pythonic(text),
    "mistral": lambda text, _s: parse_mistral(text),
    "deepseek": lambda text, _s: parse_deepseek(text),
    # Agent-framework text formats: never auto-detected; Cline XML and ReAct need declared tools.
    "cline_xml": parse_cline_xml,
    "vcp": lambda text, _s: parse_vcp(text),
    "react": parse_react,
}
_ALIASES = {
    "qwen": "hermes", "qwen2.5": "hermes", "qwen3": "hermes",
    "qwen3_xml": "qwen3_coder", "llama": "llama3_json", "llama3": "llama3_json",
    "llama4_pythonic": "pythonic", "deepseek_v3": "deepseek", "deepseek_v31": "deepseek",
}


def family_names() -> list[str]:
    """Registered family names and aliases, sorted."""
    return sorted([*FAMILIES, *_ALIASES])


def _resolve(family: str) -> str:
    name = _ALIASES.get(family, family)
    if name not in FAMILIES:
        raise UnknownFamily(f"unknown tool-call family {family!r}; known: {', '.join(family_names())}")
    return name


def detect_family(text: str) -> str | None:
    """The family whose markers appear in the text (reasoning already removed), else None."""
    if CALLS_BEGIN in text or CALL_BEGIN in text:
        return "deepseek"
    if TOOL_CALLS in text:
        return "mistral"
    tag = text.find(OPEN_TAG)
    if tag != -1:
        after = text[tag + len(OPEN_TAG) : tag + len(OPEN_TAG) + 64].lstrip()
        return "qwen3_coder" if after.startswith(FUNC_OPEN) else "hermes"
    if FUNC_OPEN in text:
        return "qwen3_coder"
    tag = text.find(PYTHON_TAG)
    start = tag + len(PYTHON_TAG) if tag != -1 else 0
    body = text[start:].lstrip()
    if looks_pythonic(body):
        return "pythonic"
    if tag != -1:
        return "llama3_json"
    # A bare JSON message is often an answer, not a call: auto mode wants a "name" key up front.
    return "llama3_json" if body.startswith("{") and '"name"' in body[:256] else None


def tool_schemas(tools: Iterable[Any] | None) -> Schemas | None:
    """Name → JSON-schema parameters from ToolInfo models, OpenAI dicts or bare names."""
    if tools is None:
        return None
    out: Schemas = {}
    for tool in tools:
        if isinstance(tool, str):
            out[tool] = {}
            continue
        data = tool.model_dump() if hasattr(tool, "model_dump") else dict(tool)
        fn = data.get("function", data)
        out[str(fn.get("name"))] = dict(fn.get("parameters") or {})
    return out


def _content(text: str, spans: list[tuple[int, int]]) -> str:
    """Text outside the spans, pieces joined as they are, ends trimmed."""
    pieces: list[str] = []
    pos = 0
    for start, end in sorted(spans):
        if start > pos:
            pieces.append(text[pos:start])
        pos = max(pos, end)
    pieces.append(text[pos:])
    return "".join(pieces).strip()


def _mark_unknown(calls: list[ParsedCall], schemas: Mapping[str, Any] | None) -> list[ParsedCall]:
    if schemas is None:
        return calls
    return [
        c.model_copy(update={"status": "unknown_tool", "error": f"no tool named {c.name!r}"})
        if c.ok and c.name not in schemas else c
        for c in calls
    ]


def parse_tool_calls(text: str, *, family: str = "auto", tools: Iterable[Any] | None = None) -> ParseResult:
    """Separate reasoning, then find every attempted call of the family (or the detected one)."""
    think = reasoning_spans(text)
    body = mask_spans(text, think)
    name = detect_family(body) if family == "auto" else _resolve(family)
    schemas = tool_schemas(tools)
    if name is None:
        return ParseResult(content=_content(text, think), reasoning=reasoning_text(text, think))
    found = FAMILIES[name](body, schemas or {})
    calls = [c.model_copy(update={"raw": text[c.start : c.end]}) for c in found.calls]
    spans = think + [(c.start, c.end) for c in calls] + list(found.consumed)
    return ParseResult(content=_content(text, spans), reasoning=reasoning_text(text, think),
                       calls=_mark_unknown(calls, schemas), family=name)
