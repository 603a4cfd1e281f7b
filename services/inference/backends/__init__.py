"""Inference backends: one protocol, many policy servers (vLLM, SGLang, OpenAI, local).

The protocol, the policy-server backends and the registry class live in
``shared.backends``; this package adds ``local`` (this service's engine) and the
registry that knows it.
"""

from services.inference.backends.registry import InferBackendRegistry, default_registry
from shared.backends.base import (
    BackendHealth,
    BackendResult,
    BackendSample,
    BackendUnsupported,
    InferenceBackend,
)

__all__ = [
    "BackendHealth",
    "BackendResult",
    "BackendSample",
    "BackendUnsupported",
    "InferBackendRegistry",
    "InferenceBackend",
    "default_registry",
]
