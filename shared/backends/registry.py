"""``InferBackendRegistry``: backends by name, built from keyword configuration.

``register(name, cls)`` takes a backend class (the reference's form) or any
factory; ``get_class(name)`` gives the class (``None`` for a bare factory or an
unknown name); ``create(name, **config)`` builds one. ``default_registry()``
builds a fresh registry with the backends any process can create: the policy
servers (``openai``, ``vllm``, ``vllm_pd``, ``sglang``) and vLLM in-process.
The inference service adds ``local`` (its own engine) to its registry
(``services.inference.backends.registry``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from shared.backends.base import InferenceBackend
from shared.errors import UnknownBackend

__all__ = ["BackendFactory", "InferBackendRegistry", "default_registry"]

BackendFactory = Callable[..., InferenceBackend]


class InferBackendRegistry:
    """Maps names (``openai``, ``vllm``, ``vllm_pd``, ``sglang``, and ``local`` in the inference service's)
    to backend factories."""

    def __init__(self) -> None:
        self._factories: dict[str, BackendFactory] = {}
        self._classes: dict[str, type | str] = {}

    def register(self, name: str, factory: BackendFactory | type, *, cls: type | str | None = None) -> None:
        """Add or replace a backend: a class (built with the config) or a factory function.

        ``cls`` names the class ``get_class`` reports for a factory (a class or ``"module:Class"``,
        imported on first ``get_class``).
        """
        self._factories[name] = factory
        self._classes.pop(name, None)
        chosen = factory if isinstance(factory, type) else cls
        if chosen is not None:
            self._classes[name] = chosen

    def get_class(self, name: str) -> type | None:
        """The backend class registered under ``name``, or ``None``."""
        found = self._classes.get(name)
        if isinstance(found, str):
            module, _, attr = found.partition(":")
            found = self._classes[name] = getattr(importlib.import_module(module), attr)
        return found

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
    from shared.backends.openai_http import OpenAIBackend

    return OpenAIBackend(**config)


def _vllm(**config: Any) -> InferenceBackend:
    # A base_url means a vLLM server; without one, vLLM runs in this process (GPU hosts).
    if "base_url" in config:
        from shared.backends.openai_http import VLLMBackend

        return VLLMBackend(**config)
    from shared.backends.vllm_engine import VLLMEngineBackend

    return VLLMEngineBackend(**config)


def _vllm_pd(**config: Any) -> InferenceBackend:
    from shared.backends.openai_http import VLLMPDBackend

    return VLLMPDBackend(**config)


def _sglang(**config: Any) -> InferenceBackend:
    from shared.backends.sglang import SGLangBackend

    return SGLangBackend(**config)


def default_registry() -> InferBackendRegistry:
    """A registry with every backend of this module."""
    fresh = InferBackendRegistry()
    for name, (factory, cls) in _BUILTINS.items():
        fresh.register(name, factory, cls=cls)
    return fresh


_HTTP = "shared.backends.openai_http"
#: Name -> (factory, ``"module:Class"`` for ``get_class``); the classes are imported on first use.
_BUILTINS: dict[str, tuple[BackendFactory, str]] = {
    "openai": (_openai, f"{_HTTP}:OpenAIBackend"),
    # A vLLM server (the reference's ``vllm`` service); ``create`` without base_url runs vLLM in-process.
    "vllm": (_vllm, f"{_HTTP}:VLLMBackend"),
    "vllm_pd": (_vllm_pd, f"{_HTTP}:VLLMPDBackend"),
    "sglang": (_sglang, "shared.backends.sglang:SGLangBackend"),
}
