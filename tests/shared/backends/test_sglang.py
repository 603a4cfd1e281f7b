"""The ``sglang`` backend against the engine's SGLang-style routes on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from services.inference.config import engine_config
from services.inference.engine import Engine
from shared.backends import BackendSample, default_registry
from shared.backends.sglang import SGLangBackend
from shared.errors import UpstreamUnavailable
from shared.local_model import resolve_source
from shared.local_tokenizer import converted_path
from tests.shared.backends.conftest import GREEDY


@pytest.fixture
async def sglang(server_url: str, local_engine: Engine) -> AsyncIterator[SGLangBackend]:
    """An SGLang backend pointed at the loopback server."""
    backend = default_registry().create("sglang", base_url=server_url, model=local_engine.name)
    assert isinstance(backend, SGLangBackend)
    yield backend
    await backend.aclose()


async def test_generate_and_score_by_token_ids(sglang: SGLangBackend, prompt: list[int],
                                               reference: BackendSample) -> None:
    sample = (await sglang.generate(prompt, GREEDY)).samples[0]
    assert sample.token_ids == reference.token_ids and sample.finish_reason == "length"
    assert sample.logprobs == pytest.approx(reference.logprobs, abs=1e-4)
    assert await sglang.get_logprobs(prompt, sample.token_ids) == pytest.approx(reference.logprobs, abs=1e-3)


async def test_pause_update_weights_resume(sglang: SGLangBackend, local_engine: Engine, prompt: list[int],
                                           reference: BackendSample) -> None:
    await sglang.pause()
    try:
        with pytest.raises(UpstreamUnavailable):
            await sglang.generate(prompt, GREEDY)
        version = local_engine.weight_version
        await sglang.update_weights(str(converted_path(resolve_source(""), engine_config().cache_dir)))
        assert local_engine.weight_version == version + 1
    finally:
        await sglang.resume()
    assert (await sglang.generate(prompt, GREEDY)).samples[0].token_ids == reference.token_ids
    assert (await sglang.health()).ok
