"""Structured results kept beside the text a model sees."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["ERROR_KINDS", "ErrorKind", "ExecStatus", "ExecutionResult", "ToolResult"]

ExecStatus = Literal[
    "ok",
    "nonzero_exit",
    "timeout",
    "cpu_limit",
    "memory_limit",
    "output_limit",
    "file_size_limit",
    "process_limit",
    "killed",
    "sandbox_error",
]

ErrorKind = Literal[
    "invalid_call",
    "unknown_tool",
    "invalid_json",
    "invalid_arguments",
    "tool_exception",
    "nonzero_exit",
    "timeout",
    "cpu_limit",
    "memory_limit",
    "output_limit",
    "file_size_limit",
    "process_limit",
    "killed",
    "sandbox_error",
    "pool_exhausted",
    "unsafe_file",
    "upstream_error",
]

ERROR_KINDS: tuple[str, ...] = ErrorKind.__args__  # type: ignore[attr-defined]


class ExecutionResult(BaseModel):
    """Outcome of one program run in a sandbox."""

    status: ExecStatus
    exit_code: int | None = None
    signal: int | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the program exited 0 within every limit."""
        return self.status == "ok"


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
