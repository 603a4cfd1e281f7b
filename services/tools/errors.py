"""Tool-service errors, derived from the shared tree in ``shared.errors``.

    ToolExecutionError (tool_error)
    └── ToolArgumentsInvalid (invalid_arguments)

The sandbox's own errors (``UnsafeResultFile``, ``SandboxUnavailable``) live in
``shared.errors`` beside ``SandboxError``, since the sandbox is shared code.
"""

from __future__ import annotations

from shared.errors import ToolExecutionError

__all__ = ["ToolArgumentsInvalid"]


class ToolArgumentsInvalid(ToolExecutionError):
    """The arguments are not JSON or do not match the tool's JSON Schema."""

    status_code = 422
    code = "invalid_arguments"
    title = "Invalid tool arguments"
