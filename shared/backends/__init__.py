"""Inference backends any process can drive: one protocol, many policy servers (vLLM, SGLang, OpenAI).

The inference service adds the backend over its own engine (``local``) in
``services.inference.backends``; everything else lives here, so a rollout
worker builds a named backend without the inference service.
"""

from shared.backends.base import (
    BackendHealth,
    BackendResult,
    BackendSample,
    BackendUnsupported,
    InferenceBackend,
    WeightSource,
    WeightTransfer,
)
from shared.backends.registry import InferBackendRegistry, default_registry

__all__ = [
    "BackendHealth",
    "BackendResult",
    "BackendSample",
    "BackendUnsupported",
    "InferBackendRegistry",
    "InferenceBackend",
    "WeightSource",
    "WeightTransfer",
    "default_registry",
]
