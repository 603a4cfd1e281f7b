"""Backends against the real engine: in-process, and over HTTP on a loopback uvicorn server."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import pytest

from services.inference.backends import BackendUnsupported, InferenceBackend, default_registry
from services.inference.backends.local import LocalBackend
from services.inference.chat import render_chat
from services.inference.config import InferenceSettings
from services.inference.engine import Engine
from services.inference.errors import BackendNotInstalled, UnknownBackend
from services.inference.loader import converted_path, resolve_source
from services.inference.service import EngineHolder
from shared.errors import UpstreamUnavailable
from shared.schema import Message, SamplingParams

GREEDY = SamplingParams(temperature=0.0, max_tokens=6, logprobs=True)


@pytest.fixture
def prompt(engine: Engine) -> list[int]:
    """A rendered chat prompt."""
    return render_chat(engine.tokenizer, [Message(role="user", content="Name a fruit.")])


@pytest.fixture
async def backends(server_url: str, engine: Engine) -> AsyncIterator[dict[str, InferenceBackend]]:
    """Every backend the registry builds, pointed at the loopback server (or the engine itself)."""
    registry = default_registry()
    made: dict[str, InferenceBackend] = {
        "local": registry.create("local", holder=EngineHolder(engine=engine)),
        "vllm": registry.create("vllm", base_url=server_url),
        "vllm_pd": registry.create("vllm_pd", prefill_url=server_url, decode_url=server_url),
        "sglang": registry.create("sglang", base_url=server_url, model=engine.name),
        "openai": registry.create("openai", base_url=f"{server_url}", model=engine.name),
    }
    yield made
    for backend in made.values():
        await backend.aclose()


async def test_token_backends_agree_on_greedy_ids_and_logprobs(backends: dict[str, InferenceBackend],
                                                               prompt: list[int]) -> None:
    results = {name: await backends[name].generate(prompt, GREEDY) for name in ("local", "vllm", "vllm_pd", "sglang")}
    reference = results["local"].samples[0]
    assert len(reference.token_ids) == 6 and isinstance(backends["vllm"], InferenceBackend)
    for name, result in results.items():
        sample = result.samples[0]
        assert sample.token_ids == reference.token_ids, name
        assert sample.logprobs == pytest.approx(reference.logprobs, abs=1e-4), name
        assert result.prompt_ids == prompt, name


async def test_scoring_matches_sampling_logprobs(backends: dict[str, InferenceBackend], prompt: list[int]) -> None:
    sample = (await backends["local"].generate(prompt, GREEDY)).samples[0]
    for name in ("local", "vllm", "sglang"):
        scored = await backends[name].get_logprobs(prompt, sample.token_ids)
        assert scored == pytest.approx(sample.logprobs, abs=1e-3), name


async def test_openai_backend_gets_text_but_cannot_score(backends: dict[str, InferenceBackend],
                                                         prompt: list[int]) -> None:
    result = await backends["openai"].generate(prompt, SamplingParams(temperature=0.0, max_tokens=4))
    assert result.samples[0].text and result.samples[0].token_ids == []
    with pytest.raises(BackendUnsupported):
        await backends["openai"].get_logprobs(prompt, [1])
    assert (await backends["openai"].health()).ok


@pytest.mark.parametrize("name", ["vllm", "sglang", "local"])
async def test_pause_refuses_new_work_until_resume(backends: dict[str, InferenceBackend], prompt: list[int],
                                                   name: str) -> None:
    backend = backends[name]
    await backend.pause()
    try:
        with pytest.raises(Exception) as caught:
            await backend.generate(prompt, GREEDY)
        assert getattr(caught.value, "status_code", None) == 503
    finally:
        await backend.resume()
    assert (await backend.generate(prompt, GREEDY)).samples[0].token_ids
    assert (await backend.health()).ok


@pytest.mark.parametrize("name", ["sglang", "local"])
async def test_weights_update_from_disk_keeps_greedy_output(backends: dict[str, InferenceBackend], engine: Engine,
                                                            prompt: list[int], name: str) -> None:
    before = (await backends[name].generate(prompt, GREEDY)).samples[0].token_ids
    version = engine.weight_version
    folder = converted_path(resolve_source(""), InferenceSettings().cache_dir())
    await backends[name].update_weights(str(folder))  # same weights: output must not change
    assert engine.weight_version == version + 1
    assert (await backends[name].generate(prompt, GREEDY)).samples[0].token_ids == before


async def test_unreachable_server_is_unhealthy_and_raises() -> None:
    backend = default_registry().create("vllm", base_url="http://127.0.0.1:9", model="m", timeout_s=2)
    assert not (await backend.health()).ok
    with pytest.raises(UpstreamUnavailable):
        await backend.generate([1, 2], GREEDY)
    await backend.aclose()


def test_registry_names_and_errors() -> None:
    registry = default_registry()
    assert registry.names() == ["local", "openai", "sglang", "vllm", "vllm_pd"]
    with pytest.raises(UnknownBackend):
        registry.create("tgi")
    assert isinstance(registry.create("local", holder=EngineHolder()), LocalBackend)


def test_in_process_vllm_names_the_extra_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # import fails as on a host without the extra
    with pytest.raises(BackendNotInstalled, match="'vllm' extra"):
        default_registry().create("vllm", model="some/model")
