"""``local``: the in-process CPU engine behind the backend protocol."""

from __future__ import annotations

import asyncio

from services.inference.config import engine_config
from services.inference.engine import Engine
from services.inference.loader import read_state_dict
from services.inference.params import GenParams
from services.inference.service import EngineHolder, get_engine_holder
from shared.backends.base import (
    BackendHealth,
    BackendResult,
    BackendSample,
    BackendUnsupported,
    WeightSource,
    WeightTransfer,
)
from shared.schema import SamplingParams

__all__ = ["LocalBackend"]


class LocalBackend:
    """Drives the local engine directly (no HTTP); the model loads on first use."""

    def __init__(self, holder: EngineHolder | None = None) -> None:
        self._holder = holder or get_engine_holder()

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> BackendResult:
        """Sample with the local engine."""
        engine = await self._holder.get()
        gen = GenParams.from_sampling(params, default_max_tokens=engine_config().default_max_tokens)
        outs = await engine.generate(prompt_ids, gen)
        samples = [BackendSample(index=o.index, token_ids=o.token_ids, logprobs=o.logprobs, text=o.text,
                                 finish_reason=o.finish_reason, stop_reason=o.stop_reason) for o in outs]
        return BackendResult(model=engine.name, prompt_ids=prompt_ids, samples=samples,
                             weight_version=engine.weight_version)

    async def get_logprobs(self, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
        """Score the completion tokens with one forward pass."""
        engine = await self._holder.get()
        scores = await engine.score([*prompt_ids, *completion_ids])
        return [float(s) for s in scores[len(prompt_ids):] if s is not None]

    async def update_weights(self, source: WeightSource) -> None:
        """Copy the weights of the HF model directory ``source`` into the running model."""
        if isinstance(source, WeightTransfer):
            raise BackendUnsupported("The local CPU engine has no weight-transfer backend; pass a model directory.")
        engine = await self._holder.get()
        state = await asyncio.to_thread(read_state_dict, source)
        await asyncio.to_thread(engine.update_weights, state)

    async def pause(self) -> None:
        """Pause the engine."""
        (await self._holder.get()).pause()

    async def resume(self) -> None:
        """Resume the engine."""
        (await self._holder.get()).resume()

    async def health(self) -> BackendHealth:
        """Healthy once loaded; reports the model and whether it is paused."""
        engine: Engine = await self._holder.get()
        return BackendHealth(ok=True, model=engine.name, paused=engine.paused)

    async def aclose(self) -> None:
        """Nothing to release: the engine belongs to its holder."""

