"""HTTP backends speaking the OpenAI completions API: ``openai``, ``vllm`` and ``vllm_pd``.

Generation goes through ``/v1/completions`` with a token-id prompt, so the
server never re-tokenises text. Plain OpenAI-compatible servers give no token
ids back (samples carry text only); vLLM is asked for ``return_token_ids`` and
scores tokens with ``prompt_logprobs``.
"""

from __future__ import annotations

from typing import Any

import httpx

from services.inference.backends._http import HttpUpstream
from services.inference.backends.base import BackendHealth, BackendResult, BackendSample, BackendUnsupported
from shared.errors import TrajforgeError, UpstreamError
from shared.schema import SamplingParams

__all__ = ["OpenAIBackend", "VLLMBackend", "VLLMPDBackend"]


def _sample(choice: dict[str, Any]) -> BackendSample:
    logprobs = (choice.get("logprobs") or {}).get("token_logprobs")
    return BackendSample(index=int(choice.get("index", 0)), token_ids=list(choice.get("token_ids") or []),
                         logprobs=logprobs, text=str(choice.get("text") or ""),
                         finish_reason=choice.get("finish_reason"), stop_reason=choice.get("stop_reason"))


class OpenAIBackend:
    """Any OpenAI-compatible server (standard fields only: unknown fields upset strict servers)."""

    def __init__(self, base_url: str, *, model: str | None = None, api_key: str | None = None,
                 timeout_s: float = 120.0, client: httpx.AsyncClient | None = None) -> None:
        self.http = HttpUpstream(base_url, api_key=api_key, timeout_s=timeout_s, client=client)
        self.model = model

    async def _model_name(self) -> str:
        if self.model is None:
            models = await self.http.get_json("/v1/models")
            self.model = str(models["data"][0]["id"])
        return self.model

    def _body(self, model: str, prompt_ids: list[int], params: SamplingParams) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "prompt": prompt_ids, "temperature": params.temperature,
                                "top_p": params.top_p, "n": params.n, "max_tokens": params.max_tokens or 256}
        if params.stop:
            body["stop"] = params.stop
        if params.seed is not None:
            body["seed"] = params.seed
        if params.logprobs:
            body["logprobs"] = params.top_logprobs or 0
        return body

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> BackendResult:
        """Complete a token-id prompt."""
        model = await self._model_name()
        answer = await self.http.post_json("/v1/completions", self._body(model, prompt_ids, params))
        return self._result(model, prompt_ids, answer)

    def _result(self, model: str, prompt_ids: list[int], answer: dict[str, Any]) -> BackendResult:
        choices = sorted(answer.get("choices") or [], key=lambda c: int(c.get("index", 0)))
        seen = (choices[0].get("prompt_token_ids") if choices else None) or answer.get("prompt_token_ids")
        return BackendResult(model=str(answer.get("model") or model), prompt_ids=list(seen or prompt_ids),
                             samples=[_sample(c) for c in choices])

    async def get_logprobs(self, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
        """Plain OpenAI servers cannot score given tokens."""
        raise BackendUnsupported("An OpenAI-compatible server cannot score given token ids; use 'vllm'.")

    async def update_weights(self, path: str) -> None:
        """Plain OpenAI servers take no weights."""
        raise BackendUnsupported("An OpenAI-compatible server cannot load new weights.")

    async def pause(self) -> None:
        """Plain OpenAI servers cannot be paused."""
        raise BackendUnsupported("An OpenAI-compatible server cannot be paused; use 'vllm' or 'sglang'.")

    async def resume(self) -> None:
        """Plain OpenAI servers cannot be paused."""
        raise BackendUnsupported("An OpenAI-compatible server cannot be paused; use 'vllm' or 'sglang'.")

    async def health(self) -> BackendHealth:
        """Healthy when ``/v1/models`` answers."""
        try:
            return BackendHealth(ok=True, model=await self._model_name())
        except TrajforgeError as exc:
            return BackendHealth(ok=False, detail=exc.message)

    async def aclose(self) -> None:
        """Close connections."""
        await self.http.aclose()


class VLLMBackend(OpenAIBackend):
    """A vLLM OpenAI server: token ids back, prompt logprobs, ``/pause`` and ``/resume``."""

    def _body(self, model: str, prompt_ids: list[int], params: SamplingParams) -> dict[str, Any]:
        body = super()._body(model, prompt_ids, params)
        body["return_token_ids"] = True
        if params.top_k != -1:
            body["top_k"] = params.top_k
        if params.repetition_penalty is not None:
            body["repetition_penalty"] = params.repetition_penalty
        return body

    async def get_logprobs(self, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
        """Score ``completion_ids`` after ``prompt_ids`` with ``prompt_logprobs``."""
        ids = [*prompt_ids, *completion_ids]
        body = {"model": await self._model_name(), "prompt": ids, "max_tokens": 1, "temperature": 0.0,
                "prompt_logprobs": 0}
        answer = await self.http.post_json("/v1/completions", body)
        entries = answer["choices"][0].get("prompt_logprobs") or []
        if len(entries) != len(ids):
            raise UpstreamError(f"Upstream returned {len(entries)} prompt logprobs for {len(ids)} tokens.")
        return [float(entries[i][str(ids[i])]["logprob"]) for i in range(len(prompt_ids), len(ids))]

    async def update_weights(self, path: str) -> None:
        """vLLM servers take weights over NCCL/IPC from the trainer, not from a path."""
        raise BackendUnsupported(
            "vLLM servers receive weights through their weight-transfer endpoints (init_weight_transfer_engine, "
            "start_weight_update, update_weights, finish_weight_update) driven by the trainer over NCCL or IPC.")

    async def pause(self) -> None:
        """``POST /pause`` (in-flight requests finish; vLLM's default mode)."""
        await self.http.request("POST", "/pause")

    async def resume(self) -> None:
        """``POST /resume``."""
        await self.http.request("POST", "/resume")

    async def health(self) -> BackendHealth:
        """``GET /health`` then the model name."""
        try:
            await self.http.request("GET", "/health")
        except TrajforgeError as exc:
            return BackendHealth(ok=False, detail=exc.message)
        return await super().health()

    async def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` from the server's own tokenizer."""
        answer = await self.http.post_json("/tokenize", {"model": await self._model_name(), "prompt": text})
        return [int(t) for t in answer["tokens"]]


class VLLMPDBackend(VLLMBackend):
    """vLLM with prefill and decode on separate servers (KV handed over by ``kv_transfer_params``)."""

    def __init__(self, prefill_url: str, decode_url: str, **kwargs: Any) -> None:
        super().__init__(decode_url, **kwargs)
        self.prefill = VLLMBackend(prefill_url, **kwargs)

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> BackendResult:
        """Prefill on one server (one token), then decode on the other with its KV handle."""
        model = await self._model_name()
        first = self._body(model, prompt_ids, params)
        first.update({"max_tokens": 1, "n": 1, "stream": False,
                      "kv_transfer_params": {"do_remote_decode": True, "do_remote_prefill": False}})
        prefilled = await self.prefill.http.post_json("/v1/completions", first)
        body = self._body(model, prompt_ids, params)
        body["kv_transfer_params"] = prefilled.get("kv_transfer_params")
        return self._result(model, prompt_ids, await self.http.post_json("/v1/completions", body))

    async def pause(self) -> None:
        """Pause both servers."""
        await self.prefill.pause()
        await super().pause()

    async def resume(self) -> None:
        """Resume both servers."""
        await self.prefill.resume()
        await super().resume()

    async def health(self) -> BackendHealth:
        """Healthy only when both servers are."""
        prefill, decode = await self.prefill.health(), await super().health()
        detail = "; ".join(d for d in (prefill.detail, decode.detail) if d)
        return BackendHealth(ok=prefill.ok and decode.ok, model=decode.model, detail=detail)

    async def aclose(self) -> None:
        """Close both pools."""
        await self.prefill.aclose()
        await super().aclose()
