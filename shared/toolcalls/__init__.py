"""The one tool-call parser: raw model text in, every attempted call with a status out.

One parser per model family (hermes/qwen, qwen3-coder XML, llama3 JSON,
pythonic, mistral, deepseek) and per agent-framework text format (Cline XML,
VCP, ReAct), reasoning separated first, each call with its character span in
the raw text. The same parser serves inference, gateway, rollout, reward and
cleaning.
"""

from shared.toolcalls._json import normalise_arguments
from shared.toolcalls.models import CallStatus, Extraction, ParsedCall, ParseResult, default_call_id
from shared.toolcalls.reasoning import reasoning_spans
from shared.toolcalls.registry import (
    FAMILIES,
    UnknownFamily,
    detect_family,
    family_names,
    parse_tool_calls,
    tool_schemas,
)

__all__ = [
    "FAMILIES",
    "CallStatus",
    "Extraction",
    "ParseResult",
    "ParsedCall",
    "UnknownFamily",
    "default_call_id",
    "detect_family",
    "family_names",
    "normalise_arguments",
    "parse_tool_calls",
    "reasoning_spans",
    "tool_schemas",
]
