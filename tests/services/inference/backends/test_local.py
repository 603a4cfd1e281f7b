"""The ``local`` backend: the engine in-process."""

from __future__ import annotations

import pytest

from services.inference.backends import BackendSample
from services.inference.backends.local import LocalBackend
from services.inference.config import engine_config
from services.inference.engine import Engine
from services.inference.errors import EnginePaused
from services.inference.loader import converted_path, resolve_source
from tests.services.inference.backends.conftest import GREEDY


async def test_generate_and_score_agree(local: LocalBackend, prompt: list[int], reference: BackendSample) -> None:
    assert len(reference.token_ids) == 6 and reference.logprobs is not None
    scored = await local.get_logprobs(prompt, reference.token_ids)
    assert scored == pytest.approx(reference.logprobs, abs=1e-3)


async def test_pause_resume_and_health(local: LocalBackend, prompt: list[int]) -> None:
    await local.pause()
    try:
        assert (await local.health()).paused
        with pytest.raises(EnginePaused):
            await local.generate(prompt, GREEDY)
    finally:
        await local.resume()
    health = await local.health()
    assert health.ok and health.paused is False


async def test_update_weights_bumps_version(local: LocalBackend, local_engine: Engine, prompt: list[int],
                                            reference: BackendSample) -> None:
    version = local_engine.weight_version
    await local.update_weights(str(converted_path(resolve_source(""), engine_config().cache_dir)))
    assert local_engine.weight_version == version + 1
    result = await local.generate(prompt, GREEDY)
    assert result.samples[0].token_ids == reference.token_ids  # same weights, same greedy output
    assert result.weight_version == version + 1
