"""One error tree for every trajforge service.

Every error the suite raises on purpose derives from ``TrajforgeError``. Each
class carries an HTTP ``status_code`` and a stable machine ``code``; one
handler per app renders them (RFC 9457 problem details, or the OpenAI error
body on OpenAI-compatible paths).

    TrajforgeError (500, internal_error)
    ├── ModelLoadError (500, model_load_error)
    ├── ClientError (400, bad_request)
    │   ├── InvalidInput (400, invalid_input)
    │   │   ├── InvalidJSON (400, invalid_json)
    │   │   └── UnknownBackend (400, unknown_backend)
    │   ├── AuthenticationError (401, invalid_api_key)
    │   ├── PermissionDenied (403, permission_denied)
    │   ├── NotFound (404, not_found)
    │   ├── Conflict (409, conflict)
    │   ├── PayloadTooLarge (413, payload_too_large)
    │   ├── ValidationFailed (422, validation_failed)
    │   └── RateLimited (429, rate_limited)
    ├── ServiceUnavailable (503, service_unavailable)
    │   ├── DatabaseNotMigrated (503, database_not_migrated)
    │   ├── Draining (503, draining)
    │   └── BackendNotInstalled (503, backend_not_installed)
    ├── BackendUnsupported (501, backend_unsupported)
    ├── UpstreamError (502, upstream_error)
    │   ├── UpstreamUnavailable (503, upstream_unavailable)
    │   └── UpstreamTimeout (504, upstream_timeout)
    └── EpisodeError (500, episode_error)      -- recorded on data, rarely rendered
        ├── ToolExecutionError (tool_error)
        │   └── SandboxError (sandbox_error)
        │       ├── UnsafeResultFile (unsafe_file)
        │       └── SandboxUnavailable (503, pool_exhausted)
        ├── EnvError (env_error)
        ├── RewardError (reward_error)
        └── ParseError (parse_error)

Episode errors are caught by rollout, env and reward loops and stored on the
trajectory: a bad episode is data, not a crash.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "AuthenticationError",
    "BackendNotInstalled",
    "BackendUnsupported",
    "ClientError",
    "Conflict",
    "DatabaseNotMigrated",
    "Draining",
    "EnvError",
    "EpisodeError",
    "InvalidInput",
    "InvalidJSON",
    "ModelLoadError",
    "NotFound",
    "ParseError",
    "PayloadTooLarge",
    "PermissionDenied",
    "RateLimited",
    "RewardError",
    "SandboxError",
    "SandboxUnavailable",
    "ServiceUnavailable",
    "ToolExecutionError",
    "TrajforgeError",
    "UnknownBackend",
    "UnsafeResultFile",
    "UpstreamError",
    "UpstreamTimeout",
    "UpstreamUnavailable",
    "ValidationFailed",
]


class TrajforgeError(Exception):
    """Base of every error trajforge raises on purpose."""

    status_code: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"
    title: ClassVar[str] = "Internal error"

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        details: dict[str, Any] | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.details = details or {}
        self.retry_after_s = retry_after_s

    def __str__(self) -> str:
        return self.message


class ModelLoadError(TrajforgeError):
    """The configured local model could not be found or loaded."""

    code = "model_load_error"
    title = "Model load failed"


class ClientError(TrajforgeError):
    status_code = 400
    code = "bad_request"
    title = "Bad request"


class InvalidInput(ClientError):
    status_code = 400
    code = "invalid_input"
    title = "Invalid input"


class InvalidJSON(InvalidInput):
    code = "invalid_json"
    title = "Invalid JSON"


class AuthenticationError(ClientError):
    status_code = 401
    code = "invalid_api_key"
    title = "Authentication required"


class PermissionDenied(ClientError):
    status_code = 403
    code = "permission_denied"
    title = "Permission denied"


class NotFound(ClientError):
    status_code = 404
    code = "not_found"
    title = "Not found"


class Conflict(ClientError):
    status_code = 409
    code = "conflict"
    title = "Conflict"


class PayloadTooLarge(ClientError):
    status_code = 413
    code = "payload_too_large"
    title = "Payload too large"


class ValidationFailed(ClientError):
    status_code = 422
    code = "validation_failed"
    title = "Validation failed"


class RateLimited(ClientError):
    status_code = 429
    code = "rate_limited"
    title = "Too many requests"


class ServiceUnavailable(TrajforgeError):
    status_code = 503
    code = "service_unavailable"
    title = "Service unavailable"


class DatabaseNotMigrated(ServiceUnavailable):
    code = "database_not_migrated"
    title = "Database not migrated"


class Draining(ServiceUnavailable):
    code = "draining"
    title = "Draining for a weight update"


class UnknownBackend(InvalidInput):
    """No inference backend is registered under the requested name."""

    code = "unknown_backend"
    title = "Unknown backend"


class BackendNotInstalled(ServiceUnavailable):
    """The backend needs an optional extra that is not installed."""

    code = "backend_not_installed"
    title = "Backend not installed"


class BackendUnsupported(TrajforgeError):
    """The backend (or the server behind it) cannot perform this call."""

    status_code = 501
    code = "backend_unsupported"
    title = "Not supported by this backend"


class UpstreamError(TrajforgeError):
    status_code = 502
    code = "upstream_error"
    title = "Upstream error"


class UpstreamUnavailable(UpstreamError):
    status_code = 503
    code = "upstream_unavailable"
    title = "Upstream unavailable"


class UpstreamTimeout(UpstreamError):
    status_code = 504
    code = "upstream_timeout"
    title = "Upstream timed out"


class EpisodeError(TrajforgeError):
    code = "episode_error"
    title = "Episode error"


class ToolExecutionError(EpisodeError):
    code = "tool_error"
    title = "Tool execution failed"


class SandboxError(ToolExecutionError):
    code = "sandbox_error"
    title = "Sandbox failure"


class UnsafeResultFile(SandboxError):
    """A file in a sandbox work dir is a link, not a regular file, or too large."""

    code = "unsafe_file"
    title = "Unsafe sandbox file"


class SandboxUnavailable(SandboxError):
    """No sandbox slot became free within the acquire timeout."""

    status_code = 503
    code = "pool_exhausted"
    title = "Sandbox pool exhausted"


class EnvError(EpisodeError):
    code = "env_error"
    title = "Environment error"


class RewardError(EpisodeError):
    code = "reward_error"
    title = "Reward computation failed"


class ParseError(EpisodeError):
    code = "parse_error"
    title = "Parse error"
