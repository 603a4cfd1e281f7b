"""Errors of the inference service, derived from the shared error tree."""

from __future__ import annotations

from shared.errors import InvalidInput, NotFound, ServiceUnavailable, TrajforgeError

__all__ = [
    "BackendNotInstalled",
    "BackendUnsupported",
    "ContextTooLong",
    "EnginePaused",
    "GenerationAborted",
    "ModelLoadError",
    "ModelNotFound",
    "UnknownBackend",
]


class ModelNotFound(NotFound):
    """The request names a model this server does not serve."""

    code = "model_not_found"
    title = "Model not found"


class ContextTooLong(InvalidInput):
    """Prompt plus ``max_tokens`` exceed the model's context window."""

    code = "context_length_exceeded"
    title = "Context too long"


class EnginePaused(ServiceUnavailable):
    """The engine is paused (e.g. for a weight update) and refuses new work."""

    code = "engine_paused"
    title = "Engine paused"


class ModelLoadError(TrajforgeError):
    """The configured model could not be found or loaded."""

    code = "model_load_error"
    title = "Model load failed"


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


class GenerationAborted(ServiceUnavailable):
    """The engine stopped a request before it finished (model failure or shutdown)."""

    code = "generation_aborted"
    title = "Generation aborted"
