"""Tool-service errors, derived from the shared tree in ``shared.errors``.

    ToolExecutionError (tool_error)
    ├── ToolArgumentsInvalid (invalid_arguments)
    └── SandboxError (sandbox_error)
        ├── UnsafeResultFile (unsafe_file)
        └── SandboxUnavailable (pool_exhausted)

The HTTP-facing ones carry a 4xx/5xx ``status_code`` so a route may raise them.
"""

from __future__ import annotations

from shared.errors import SandboxError, ToolExecutionError

__all__ = [
    "SandboxUnavailable",
    "ToolArgumentsInvalid",
    "UnsafeResultFile",
]


class ToolArgumentsInvalid(ToolExecutionError):
    """The arguments are not JSON or do not match the tool's JSON Schema."""

    status_code = 422
    code = "invalid_arguments"
    title = "Invalid tool arguments"


class UnsafeResultFile(SandboxError):
    """A file in a sandbox work dir is a link, not a regular file, or too large."""

    code = "unsafe_file"
    title = "Unsafe sandbox file"


class SandboxUnavailable(SandboxError):
    """No sandbox slot became free within the acquire timeout."""

    status_code = 503
    code = "pool_exhausted"
    title = "Sandbox pool exhausted"
