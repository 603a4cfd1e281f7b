"""``python`` and ``bash`` tools: run model-written code in the sandbox pool."""

from __future__ import annotations

from typing import Any, ClassVar, cast

from services.tools.base import BaseTool, ToolOutput, truncate_middle
from services.tools.results import ErrorKind
from shared.sandbox.limits import MAX_TIMEOUT_S
from shared.sandbox.pool import SandboxPool
from shared.sandbox.result import ExecutionResult

__all__ = ["BashTool", "CodeTool", "PythonTool"]


def _error_kind(result: ExecutionResult) -> ErrorKind | None:
    # Every run status other than "ok" is also a tool error kind of the same name.
    return None if result.ok else cast(ErrorKind, result.status)


def _parameters(language: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "code": {"type": "string", "maxLength": 1_000_000, "description": f"{language} source"},
            "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT_S},
        },
        "required": ["code"],
        "additionalProperties": False,
    }


class CodeTool(BaseTool):
    """Runs code in a fresh sandbox per call; output shows stdout, stderr and exit status."""

    language: ClassVar[str] = "python"

    def __init__(self, pool: SandboxPool, *, max_output_chars: int = 8000) -> None:
        self.pool = pool
        self.max_output_chars = max_output_chars

    async def execute(self, arguments: dict[str, Any]) -> ToolOutput:
        """Run ``arguments['code']``; a failed run is flagged with its status as error kind."""
        result = await self.pool.execute(
            arguments["code"], language=self.language, timeout_s=arguments.get("timeout_s")
        )
        return ToolOutput(value=self.render(result), error_kind=_error_kind(result))

    def render(self, result: ExecutionResult) -> str:
        """Model-facing text of one run; each stream keeps its own share of the budget."""
        share = max(self.max_output_chars // 2 - 100, 100)
        parts = [f"exit_status: {result.status} (code {result.exit_code})"]
        for label, text, cut in (
            ("stdout", result.stdout_text, result.stdout_truncated),
            ("stderr", result.stderr_text, result.stderr_truncated),
        ):
            if text or cut:
                suffix = "\n[output cap reached]" if cut else ""
                parts.append(f"{label}:\n{truncate_middle(text, share)}{suffix}")
        return "\n".join(parts)


class PythonTool(CodeTool):
    """The ``python`` tool."""

    function_name = "python"
    description = (
        "Run a Python 3 program in an isolated sandbox (no network) and return its output."
    )
    parameters = _parameters("Python 3")
    language = "python"


class BashTool(CodeTool):
    """The ``bash`` tool."""

    function_name = "bash"
    description = "Run a bash script in an isolated sandbox (no network) and return its output."
    parameters = _parameters("bash")
    language = "bash"
