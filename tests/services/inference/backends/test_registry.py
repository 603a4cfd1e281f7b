"""The inference service's ``InferBackendRegistry``: the shared backends plus ``local``, its engine."""

from __future__ import annotations

import pytest

from services.inference.backends import InferBackendRegistry, InferenceBackend, default_registry
from services.inference.backends.local import LocalBackend
from services.inference.errors import UnknownBackend
from services.inference.service import EngineHolder


def test_default_names_and_unknown_name() -> None:
    registry = default_registry()
    assert registry.names() == ["local", "openai", "sglang", "vllm", "vllm_pd"]
    assert registry.get_class("local") is LocalBackend
    with pytest.raises(UnknownBackend, match="tgi"):
        registry.create("tgi")


def test_created_backends_satisfy_the_protocol() -> None:
    registry = default_registry()
    local = registry.create("local", holder=EngineHolder())
    remote = registry.create("vllm", base_url="http://127.0.0.1:9")
    assert isinstance(local, LocalBackend)
    assert isinstance(local, InferenceBackend) and isinstance(remote, InferenceBackend)


def test_register_adds_a_backend() -> None:
    registry = InferBackendRegistry()
    registry.register("mine", lambda **config: LocalBackend(**config))
    assert registry.names() == ["mine"] and isinstance(registry.create("mine", holder=EngineHolder()), LocalBackend)
