"""Result models of the tool-call parser: every attempted call keeps a status and a span."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, Field

from shared.schema import FunctionCall, ToolCall, dump_arguments

__all__ = ["CallStatus", "Extraction", "ParseResult", "ParsedCall", "default_call_id"]

CallStatus = Literal["ok", "invalid_json", "unclosed", "missing_name", "not_object", "unknown_tool"]


def default_call_id(index: int) -> str:
    """Default id of the index-th ok call: ``call_<index>``."""
    return f"call_{index}"


class ParsedCall(BaseModel):
    """One attempted tool call found in raw model text."""

    status: CallStatus
    name: str | None = None
    arguments: dict[str, Any] | None = None
    raw: str
    start: int = Field(ge=0, description="character offset of the call in the raw text")
    end: int = Field(ge=0, description="offset one past the last character of the call")
    family: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the call parsed cleanly and names a known tool."""
        return self.status == "ok"

    def to_tool_call(self, call_id: str) -> ToolCall:
        """This ok call as a canonical OpenAI tool call (arguments a JSON string)."""
        if not self.ok or self.name is None:
            raise ValueError(f"only ok calls convert to ToolCall; this one is {self.status}")
        fn = FunctionCall(name=self.name, arguments=dump_arguments(self.arguments or {}))
        return ToolCall(id=call_id, function=fn)


class ParseResult(BaseModel):
    """Text outside calls, separated reasoning, and every attempted call in order."""

    content: str = ""
    reasoning: str | None = None
    calls: list[ParsedCall] = Field(default_factory=list)
    family: str | None = None

    @property
    def ok_calls(self) -> list[ParsedCall]:
        """Calls whose status is ok."""
        return [c for c in self.calls if c.ok]

    @property
    def attempted(self) -> bool:
        """True when the text holds at least one attempted call, well formed or not."""
        return bool(self.calls)

    def to_tool_calls(self, id_factory: Callable[[int], str] | None = None) -> list[ToolCall]:
        """Ok calls as shared ToolCalls; ids come from ``id_factory`` (default ``call_<n>``)."""
        make_id = id_factory or default_call_id
        return [call.to_tool_call(make_id(i)) for i, call in enumerate(self.ok_calls)]


class Extraction(NamedTuple):
    """What a family parser returns: calls plus other spans it consumed (wrapper tags)."""

    calls: list[ParsedCall]
    consumed: list[tuple[int, int]]
