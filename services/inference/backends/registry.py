"""``InferBackendRegistry``: backends by name, built from keyword configuration."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.inference.backends.base import InferenceBackend
from services.inference.errors import UnknownBackend

__all__ = ["InferBackendRegistry", "default_registry"]

BackendFactory = Callable[..., InferenceBackend]


class InferBackendRegistry:
    """Maps names (``openai``, ``vllm``, ``vllm_pd``, ``sglang``, ``local``) to backend factories."""

    def __init__(self) -> None:
        self._factories: dict[str, BackendFactory] = {}

    def register(self, name: str, factory: BackendFactory) -> None:
        """Add or replace a backend factory."""
        self._factories[name] = factory

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._factories)

    def create(self, name: str, **config: Any) -> InferenceBackend:
        """Build the backend ``name`` with ``config`` (e.g. ``base_url=...``)."""
        factory = self._factories.get(name)
        if factory is None:
            raise UnknownBackend(f"No inference backend named {name!r}; known: {', '.join(self.names())}.",
                                 param="backend")
        return factory(**config)


def _openai(**config: Any) -> InferenceBackend:
    from services.inference.backends.openai_http import OpenAIBackend

    return OpenAIBackend(**config)


def _vllm(**config: Any) -> InferenceBackend:
    # A base_url means a vLLM server; without one, vLLM runs in this process (GPU hosts).
    if "base_url" in config:
        from services.inference.backends.openai_http import VLLMBackend

        return VLLMBackend(**config)
    from services.inference.backends.vllm_engine import VLLMEngineBackend

    return VLLMEngineBackend(**config)


def _vllm_pd(**config: Any) -> InferenceBackend:
    from services.inference.backends.openai_http import VLLMPDBackend

    return VLLMPDBackend(**config)


def _sglang(**config: Any) -> InferenceBackend:
    from services.inference.backends.sglang import SGLangBackend

    return SGLangBackend(**config)


def _local(**config: Any) -> InferenceBackend:
    from services.inference.backends.local import LocalBackend

    return LocalBackend(**config)


def default_registry() -> InferBackendRegistry:
    """A registry with every built-in backend."""
    registry = InferBackendRegistry()
    for name, factory in {"openai": _openai, "vllm": _vllm, "vllm_pd": _vllm_pd, "sglang": _sglang,
                          "local": _local}.items():
        registry.register(name, factory)
    return registry
