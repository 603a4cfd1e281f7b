"""Errors of the inference service, derived from the shared error tree.

``ModelLoadError`` and the backend errors (``UnknownBackend``, ``BackendNotInstalled``,
``BackendUnsupported``) live in ``shared.errors``, since shared code raises them too; they are
re-exported here.
"""

from __future__ import annotations

from shared.errors import (
    BackendNotInstalled,
    BackendUnsupported,
    InvalidInput,
    ModelLoadError,
    NotFound,
    ServiceUnavailable,
    UnknownBackend,
)

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


class GenerationAborted(ServiceUnavailable):
    """The engine stopped a request before it finished (model failure or shutdown)."""

    code = "generation_aborted"
    title = "Generation aborted"
