"""``vllm``, ``vllm_pd`` and ``openai`` backends against the engine served by uvicorn on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from services.inference.engine import Engine
from shared.backends import BackendSample, default_registry
from shared.backends.openai_http import OpenAIBackend, VLLMBackend, VLLMPDBackend
from shared.errors import BackendUnsupported, NotFound, TrajforgeError, UpstreamUnavailable
from shared.schema import SamplingParams
from tests.shared.backends.conftest import GREEDY


@pytest.fixture
async def vllm(server_url: str) -> AsyncIterator[VLLMBackend]:
    """A vLLM backend (model name discovered from /v1/models)."""
    backend = default_registry().create("vllm", base_url=server_url)
    assert isinstance(backend, VLLMBackend)
    yield backend
    await backend.aclose()


async def test_vllm_returns_the_engines_ids_and_logprobs(vllm: VLLMBackend, prompt: list[int],
                                                         reference: BackendSample) -> None:
    result = await vllm.generate(prompt, GREEDY)
    assert result.prompt_ids == prompt
    assert result.samples[0].token_ids == reference.token_ids
    assert result.samples[0].logprobs == pytest.approx(reference.logprobs, abs=1e-4)
    scored = await vllm.get_logprobs(prompt, reference.token_ids)
    assert scored == pytest.approx(reference.logprobs, abs=1e-3)


async def test_vllm_tokenize_pause_resume(vllm: VLLMBackend, local_engine: Engine, prompt: list[int]) -> None:
    assert await vllm.tokenize("Hello there") == local_engine.encode("Hello there")
    await vllm.pause()
    try:
        with pytest.raises(UpstreamUnavailable):
            await vllm.generate(prompt, GREEDY)
    finally:
        await vllm.resume()
    assert (await vllm.health()).ok
    with pytest.raises(TrajforgeError, match="not an HF model directory"):
        await vllm.update_weights("/nowhere")
    assert (await vllm.health()).ok and not local_engine.paused  # a failed reload still resumes


async def test_vllm_pd_prefills_then_decodes(server_url: str, prompt: list[int], reference: BackendSample) -> None:
    backend = default_registry().create("vllm_pd", prefill_url=server_url, decode_url=server_url)
    assert isinstance(backend, VLLMPDBackend)
    result = await backend.generate(prompt, GREEDY)
    assert result.samples[0].token_ids == reference.token_ids
    assert (await backend.health()).ok
    await backend.aclose()


async def test_openai_backend_gets_text_but_cannot_score(server_url: str, local_engine: Engine,
                                                         prompt: list[int]) -> None:
    backend = default_registry().create("openai", base_url=server_url, model=local_engine.name)
    assert isinstance(backend, OpenAIBackend)
    result = await backend.generate(prompt, SamplingParams(temperature=0.0, max_tokens=4, n=2))
    assert [s.index for s in result.samples] == [0, 1] and result.samples[0].text
    assert result.samples[0].token_ids == []  # standard fields only: no token ids asked for
    with pytest.raises(BackendUnsupported):
        await backend.get_logprobs(prompt, [1])
    with pytest.raises(BackendUnsupported):
        await backend.pause()
    await backend.aclose()


async def test_upstream_errors_map_to_shared_errors(server_url: str, prompt: list[int]) -> None:
    wrong_model = default_registry().create("vllm", base_url=server_url, model="not-served")
    with pytest.raises(NotFound):
        await wrong_model.generate(prompt, GREEDY)
    await wrong_model.aclose()
    down = default_registry().create("vllm", base_url="http://127.0.0.1:9", model="m", timeout_s=2)
    assert not (await down.health()).ok
    with pytest.raises(UpstreamUnavailable):
        await down.generate(prompt, GREEDY)
    await down.aclose()
