"""Inference backends: one protocol, many policy servers (vLLM, SGLang, OpenAI, local)."""

from services.inference.backends.base import (
    BackendHealth,
    BackendResult,
    BackendSample,
    BackendUnsupported,
    InferenceBackend,
)
from services.inference.backends.registry import InferBackendRegistry, default_registry

__all__ = [
    "BackendHealth",
    "BackendResult",
    "BackendSample",
    "BackendUnsupported",
    "InferBackendRegistry",
    "InferenceBackend",
    "default_registry",
]
