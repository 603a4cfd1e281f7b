"""The shared ``InferBackendRegistry``: the backends any process builds, unknown names, optional in-process vLLM."""

from __future__ import annotations

import sys

import pytest

from shared.backends import InferBackendRegistry, InferenceBackend, default_registry
from shared.backends.openai_http import VLLMBackend, VLLMPDBackend
from shared.backends.sglang import SGLangBackend
from shared.errors import BackendNotInstalled, UnknownBackend


def test_names_are_the_policy_servers_without_the_inference_engine() -> None:
    registry = default_registry()
    assert registry.names() == ["openai", "sglang", "vllm", "vllm_pd"]  # ``local`` is the inference service's
    with pytest.raises(UnknownBackend, match="tgi"):
        registry.create("tgi")
    assert registry.get_class("vllm") is VLLMBackend and registry.get_class("vllm_pd") is VLLMPDBackend
    assert registry.get_class("sglang") is SGLangBackend and registry.get_class("local") is None


def test_created_backends_satisfy_the_protocol() -> None:
    backend = default_registry().create("sglang", base_url="http://127.0.0.1:9", model="m")
    assert isinstance(backend, InferenceBackend)


def test_register_a_factory_with_its_class() -> None:
    registry = InferBackendRegistry()
    registry.register("mine", lambda **config: VLLMBackend(**config), cls="shared.backends.openai_http:VLLMBackend")
    assert registry.names() == ["mine"] and registry.get_class("mine") is VLLMBackend
    assert isinstance(registry.create("mine", base_url="http://127.0.0.1:9"), VLLMBackend)


def test_in_process_vllm_names_the_extra_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # import fails as on a host without the extra
    with pytest.raises(BackendNotInstalled, match="'vllm' extra"):
        default_registry().create("vllm", model="some/model")
