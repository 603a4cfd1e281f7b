"""The inference service's backend registry: the shared backends plus ``local``, its own engine.

``registry`` is the global instance (the reference's ``infer_registry.registry``):
``register(name, cls)``, ``get_class(name)``, ``create(name, **config)``;
``default_registry()`` builds a fresh one. The policy-server backends and their
registry class live in ``shared.backends``, so other services build them
without this one.
"""

from __future__ import annotations

from typing import Any

from shared.backends.base import InferenceBackend
from shared.backends.registry import InferBackendRegistry
from shared.backends.registry import default_registry as shared_registry

__all__ = ["InferBackendRegistry", "default_registry", "registry"]


def _local(**config: Any) -> InferenceBackend:
    from services.inference.backends.local import LocalBackend

    return LocalBackend(**config)


def default_registry() -> InferBackendRegistry:
    """A registry with every built-in backend: the shared ones and ``local``."""
    fresh = shared_registry()
    fresh.register("local", _local, cls="services.inference.backends.local:LocalBackend")
    return fresh


#: The global registry with every built-in backend.
registry = default_registry()
