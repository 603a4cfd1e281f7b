"""Structured results kept beside the text a model sees."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from shared.sandbox.result import ExecFailure

__all__ = ["ERROR_KINDS", "ErrorKind", "ToolResult"]

ErrorKind = Literal[
    "invalid_call",
    "unknown_tool",
    "invalid_json",
    "invalid_arguments",
    "tool_exception",
    ExecFailure,
    "pool_exhausted",
    "unsafe_file",
    "upstream_error",
]

ERROR_KINDS: tuple[str, ...] = ErrorKind.__args__  # type: ignore[attr-defined]


class ToolResult(BaseModel):
    """One tool call's outcome: the model-facing ``content`` plus how it went."""

    tool_call_id: str = ""
    name: str = ""
    ok: bool
    error_kind: ErrorKind | None = None
    content: str
    latency_s: float = Field(0.0, ge=0.0)

    @property
    def status(self) -> Literal["ok", "error"]:
        """``ok`` or ``error``, as the wire format spells it."""
        return "ok" if self.ok else "error"
