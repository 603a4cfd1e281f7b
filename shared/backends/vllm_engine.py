"""In-process vLLM (GPU hosts): imported only when this backend is created.

Weights: ``update_weights(path)`` points the workers at the new directory
(``collective_rpc("update_config", ...)``) and reloads (``reload_weights``);
``update_weights(WeightTransfer(...))`` runs the engine's weight-transfer round
(``init_weight_transfer_engine`` once, then ``update_weights``) while the trainer
sends. ``pause``/``resume`` are vLLM's sleep mode (level 1) and ``wake_up``.
Not verified without a GPU: none of this runs on the CPU test machines.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

from shared.backends.base import BackendHealth, BackendResult, BackendSample, WeightSource, WeightTransfer
from shared.errors import BackendNotInstalled
from shared.schema import SamplingParams

__all__ = ["VLLMEngineBackend", "import_vllm"]


def import_vllm() -> Any:
    """The ``vllm`` module, or a clear error naming the extra that installs it."""
    try:
        return importlib.import_module("vllm")
    except ImportError as exc:
        raise BackendNotInstalled(
            "The in-process vLLM backend needs vLLM: install the 'vllm' extra (pip install 'trajforge[vllm]') "
            "on a GPU host, or use the 'vllm' backend with a base_url to talk to a vLLM server."
        ) from exc


class VLLMEngineBackend:
    """vLLM's offline ``LLM`` in this process; calls run in a worker thread."""

    def __init__(self, model: str, **engine_kwargs: Any) -> None:
        self._vllm = import_vllm()
        self.model = model
        self._llm = self._vllm.LLM(model=model, **engine_kwargs)
        self._transfer_ready = False

    def _params(self, params: SamplingParams, **extra: Any) -> Any:
        return self._vllm.SamplingParams(
            temperature=params.temperature, top_p=params.top_p, top_k=params.top_k, n=params.n, seed=params.seed,
            max_tokens=params.max_tokens or 256, stop=params.stop or None,
            logprobs=(params.top_logprobs or 0) if params.logprobs else None, **extra)

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> BackendResult:
        """Generate from token ids."""
        prompt = {"prompt_token_ids": prompt_ids}
        [result] = await asyncio.to_thread(self._llm.generate, [prompt], self._params(params), use_tqdm=False)
        samples = [BackendSample(index=o.index, token_ids=list(o.token_ids), text=o.text,
                                 logprobs=[d[t].logprob for d, t in zip(o.logprobs, o.token_ids, strict=True)]
                                 if o.logprobs else None,
                                 finish_reason=o.finish_reason, stop_reason=o.stop_reason) for o in result.outputs]
        return BackendResult(model=self.model, prompt_ids=prompt_ids, samples=samples)

    async def get_logprobs(self, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
        """Score given tokens with ``prompt_logprobs``."""
        ids = [*prompt_ids, *completion_ids]
        params = self._params(SamplingParams(max_tokens=1, temperature=0.0), prompt_logprobs=0)
        [result] = await asyncio.to_thread(self._llm.generate, [{"prompt_token_ids": ids}], params, use_tqdm=False)
        return [result.prompt_logprobs[i][ids[i]].logprob for i in range(len(prompt_ids), len(ids))]

    async def update_weights(self, source: WeightSource) -> None:
        """Reload from a directory, or receive one weight-transfer round."""
        if isinstance(source, WeightTransfer):
            await asyncio.to_thread(self._receive, source)
            return
        overrides = {"model_config": {"model": str(source)}}
        await asyncio.to_thread(self._llm.collective_rpc, "update_config", args=(overrides,))
        await asyncio.to_thread(self._llm.collective_rpc, "reload_weights")

    def _receive(self, round_: WeightTransfer) -> None:
        base = importlib.import_module("vllm.distributed.weight_transfer.base")
        if round_.init_info is not None and not self._transfer_ready:
            self._llm.init_weight_transfer_engine(base.WeightTransferInitRequest(init_info=round_.init_info))
            self._transfer_ready = True
        self._llm.update_weights(base.WeightTransferUpdateRequest(update_info=round_.update_info))

    async def pause(self) -> None:
        """Release GPU memory (vLLM sleep mode, level 1)."""
        await asyncio.to_thread(self._llm.sleep, 1)

    async def resume(self) -> None:
        """Wake from sleep mode."""
        await asyncio.to_thread(self._llm.wake_up)

    async def health(self) -> BackendHealth:
        """In-process: healthy once constructed."""
        return BackendHealth(ok=True, model=self.model)

    async def aclose(self) -> None:
        """Nothing to close."""
