"""Gateway errors (subclasses of the shared tree); ``shared.web.openai_errors`` renders them.

    NotFound
    └── UnknownModel (404, model_not_found)
    PermissionDenied
    └── PathNotAllowed (403, path_not_allowed)
    InvalidInput
    └── ToolPairingError (400, invalid_tool_pairing)
    ClientError
    └── ClientClosed (499, client_closed)   -- recorded on traces, never sent
"""

from __future__ import annotations

from shared.errors import ClientError, InvalidInput, NotFound, PermissionDenied

__all__ = [
    "ClientClosed",
    "PathNotAllowed",
    "ToolPairingError",
    "UnknownModel",
]


class UnknownModel(NotFound):
    """No upstream serves the requested model name."""

    code = "model_not_found"
    title = "Model not found"


class PathNotAllowed(PermissionDenied):
    """The path is not on the upstream allow-list (control endpoints never pass)."""

    code = "path_not_allowed"
    title = "Path not allowed"


class ToolPairingError(InvalidInput):
    """Assistant tool calls and tool messages do not answer each other one to one."""

    code = "invalid_tool_pairing"
    title = "Tool calls and tool messages do not pair"


class ClientClosed(ClientError):
    """The client went away before a streamed answer ended."""

    status_code = 499
    code = "client_closed"
    title = "Client closed the connection"
