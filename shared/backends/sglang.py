"""``sglang``: an SGLang server through its native ``/generate`` API (token ids in and out).

Weights: ``update_weights(path)`` is ``/update_weights_from_disk``;
``update_weights(WeightTransfer(...))`` is ``/init_weights_update_group`` (once,
from ``init_info``) then ``/update_weights_from_distributed`` (``update_info``:
``names``, ``dtypes``, ``shapes``, ``group_name``) while the trainer broadcasts;
``update_weights_from_tensor`` posts tensors serialised by SGLang's own
serializer. Memory: ``sleep``/``wake_up`` are ``/release_memory_occupation`` and
``/resume_memory_occupation``. Verified here against the local engine's server:
``update_weights_from_disk`` and pause/continue; not verified without a GPU: the
distributed and tensor routes.
"""

from __future__ import annotations

from typing import Any

import httpx

from shared.backends._http import HttpUpstream
from shared.backends.base import BackendHealth, BackendResult, BackendSample, WeightSource, WeightTransfer
from shared.errors import TrajforgeError, UpstreamError
from shared.schema import SamplingParams

__all__ = ["SGLangBackend"]


def _sampling(params: SamplingParams) -> dict[str, Any]:
    out: dict[str, Any] = {"temperature": params.temperature, "top_p": params.top_p, "top_k": params.top_k,
                           "max_new_tokens": params.max_tokens or 256, "n": params.n}
    if params.stop:
        out["stop"] = params.stop
    if params.seed is not None:
        out["sampling_seed"] = params.seed
    if params.repetition_penalty is not None:
        out["repetition_penalty"] = params.repetition_penalty
    return out


def _sample(index: int, item: dict[str, Any]) -> BackendSample:
    meta = item.get("meta_info") or {}
    pairs = meta.get("output_token_logprobs") or []  # [[logprob, token_id, text|None], ...]
    ids = item.get("output_ids") or [int(p[1]) for p in pairs]
    finish = meta.get("finish_reason") or {}
    return BackendSample(index=index, token_ids=list(ids), logprobs=[float(p[0]) for p in pairs] or None,
                         text=str(item.get("text") or ""), finish_reason=finish.get("type"),
                         stop_reason=finish.get("matched"))


class SGLangBackend:
    """SGLang's native API: ``/generate`` with ``input_ids``, pause/continue, weights from disk."""

    def __init__(self, base_url: str, *, model: str | None = None, api_key: str | None = None,
                 timeout_s: float = 120.0, client: httpx.AsyncClient | None = None) -> None:
        self.http = HttpUpstream(base_url, api_key=api_key, timeout_s=timeout_s, client=client)
        self.model = model or ""
        self._group_ready = False

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> BackendResult:
        """``POST /generate`` with token ids and output logprobs."""
        body = {"input_ids": prompt_ids, "sampling_params": _sampling(params), "return_logprob": True,
                "logprob_start_len": len(prompt_ids)}
        answer = (await self.http.request("POST", "/generate", json=body)).json()
        items = answer if isinstance(answer, list) else [answer]
        return BackendResult(model=self.model, prompt_ids=prompt_ids,
                             samples=[_sample(i, item) for i, item in enumerate(items)])

    async def get_logprobs(self, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
        """Score given tokens: no new tokens, input logprobs from the completion's start."""
        ids = [*prompt_ids, *completion_ids]
        body = {"input_ids": ids, "sampling_params": {"max_new_tokens": 0, "temperature": 0.0},
                "return_logprob": True, "logprob_start_len": len(prompt_ids)}
        meta = (await self.http.post_json("/generate", body)).get("meta_info") or {}
        pairs = [p for p in meta.get("input_token_logprobs") or [] if p[0] is not None]
        if len(pairs) < len(completion_ids):
            raise UpstreamError(f"SGLang returned {len(pairs)} input logprobs for {len(completion_ids)} tokens.")
        return [float(p[0]) for p in pairs[-len(completion_ids):]] if completion_ids else []

    async def update_weights(self, source: WeightSource) -> None:
        """``/update_weights_from_disk`` for a path; the distributed update for a ``WeightTransfer``."""
        if isinstance(source, WeightTransfer):
            if source.init_info is not None and not self._group_ready:
                self._check(await self.http.post_json("/init_weights_update_group", source.init_info), "group")
                self._group_ready = True
            body = {"flush_cache": True, **source.update_info}
            self._check(await self.http.post_json("/update_weights_from_distributed", body), "distributed update")
            return
        answer = await self.http.post_json("/update_weights_from_disk", {"model_path": source})
        if answer.get("success") is False:
            raise UpstreamError(f"SGLang refused the weights at {source}: {answer.get('message')}")

    async def update_weights_from_tensor(self, serialized_named_tensors: list[str], *,
                                         load_format: str | None = None, flush_cache: bool = True) -> None:
        """``POST /update_weights_from_tensor`` (one serialised entry per tensor-parallel rank)."""
        body: dict[str, Any] = {"serialized_named_tensors": serialized_named_tensors, "flush_cache": flush_cache}
        if load_format is not None:
            body["load_format"] = load_format
        self._check(await self.http.post_json("/update_weights_from_tensor", body), "tensor update")

    async def sleep(self, tags: list[str] | None = None) -> None:
        """``POST /release_memory_occupation``."""
        await self.http.request("POST", "/release_memory_occupation", json={"tags": tags} if tags else {})

    async def wake_up(self, tags: list[str] | None = None) -> None:
        """``POST /resume_memory_occupation``."""
        await self.http.request("POST", "/resume_memory_occupation", json={"tags": tags} if tags else {})

    @staticmethod
    def _check(answer: dict[str, Any], what: str) -> None:
        if answer.get("success") is False:
            raise UpstreamError(f"SGLang refused the {what}: {answer.get('message')}")

    async def pause(self) -> None:
        """``POST /pause_generation``."""
        await self.http.request("POST", "/pause_generation", json={})

    async def resume(self) -> None:
        """``POST /continue_generation``."""
        await self.http.request("POST", "/continue_generation", json={})

    async def health(self) -> BackendHealth:
        """``GET /health``."""
        try:
            await self.http.request("GET", "/health")
        except TrajforgeError as exc:
            return BackendHealth(ok=False, detail=exc.message)
        return BackendHealth(ok=True, model=self.model or None)

    async def aclose(self) -> None:
        """Close connections."""
        await self.http.aclose()
