"""AgentSDK seed, "InferBackendRegistry": ``register(name, cls)`` / ``get_class(name)`` and the global
``registry`` with ``vllm`` and ``vllm_pd``.

trajforge names: ``aura.runner.infer_adapter.infer_registry`` is ``services.inference.backends.registry``
(the policy-server backends it builds live in ``shared.backends``).
"""

from __future__ import annotations

from services.inference.backends.local import LocalBackend
from services.inference.backends.registry import InferBackendRegistry, registry
from services.inference.service import EngineHolder
from shared.backends.openai_http import VLLMBackend, VLLMPDBackend


def test_global_registry_has_the_reference_backends() -> None:
    assert registry.get_class("vllm") is VLLMBackend
    assert registry.get_class("vllm_pd") is VLLMPDBackend
    assert registry.get_class("tgi") is None
    backend = registry.create("vllm", base_url="http://127.0.0.1:9", model="m")
    assert isinstance(backend, VLLMBackend)


def test_register_a_class_and_get_it_back() -> None:
    mine = InferBackendRegistry()
    mine.register("my_backend", LocalBackend)
    cls = mine.get_class("my_backend")
    assert cls is LocalBackend
    assert isinstance(mine.create("my_backend", holder=EngineHolder()), LocalBackend)
