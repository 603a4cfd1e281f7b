"""HTTP backends speaking the OpenAI completions API: ``openai``, ``vllm`` and ``vllm_pd``.

Generation goes through ``/v1/completions`` with a token-id prompt, so the
server never re-tokenises text. Plain OpenAI-compatible servers give no token
ids back (samples carry text only); vLLM is asked for ``return_token_ids`` and
scores tokens with ``prompt_logprobs``.

vLLM's control plane (routes a vLLM server registers only under
``VLLM_SERVER_DEV_MODE=1``; the weight-transfer ones also need
``--weight-transfer-config``): ``/pause?mode=`` and ``/resume``, ``/sleep?level=``,
``/wake_up?tags=`` and ``/is_sleeping``, ``/collective_rpc``,
``/reset_prefix_cache``, and the transfer round ``/init_weight_transfer_engine``
-> ``/start_weight_update`` -> ``/update_weights`` -> ``/finish_weight_update``.
``update_weights(path)`` pauses (``mode=wait``), points the workers at the new
directory (``collective_rpc update_config``), reloads (``reload_weights``),
resets the prefix cache and resumes. ``update_weights(WeightTransfer(...))``
runs one transfer round between pause and resume; servers older than the
explicit start/finish calls (404) are driven without them.

Verified here against the local engine's vLLM-subset server (pause/resume,
sleep/wake_up, collective_rpc update_config + reload_weights). Not verified
without a GPU: a real vLLM server's collective_rpc semantics for a new model
directory, and the NCCL/IPC transfer round (the local engine has no transfer
backend and answers 501).
"""

from __future__ import annotations

from typing import Any

import httpx

from shared.backends._http import HttpUpstream
from shared.backends.base import (
    BackendHealth,
    BackendResult,
    BackendSample,
    BackendUnsupported,
    WeightSource,
    WeightTransfer,
)
from shared.clients.scoring import parse_prompt_logprobs, prompt_logprobs_body
from shared.errors import NotFound, TrajforgeError
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

    async def update_weights(self, source: WeightSource) -> None:
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
    """A vLLM OpenAI server: token ids back, prompt logprobs and the control plane (module docstring)."""

    def __init__(self, base_url: str, **kwargs: Any) -> None:
        super().__init__(base_url, **kwargs)
        self._transfer_ready = False

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
        answer = await self.http.post_json("/v1/completions", prompt_logprobs_body(await self._model_name(), ids))
        scores = parse_prompt_logprobs(answer, ids)[len(prompt_ids):]
        return [float(s) for s in scores if s is not None]

    async def update_weights(self, source: WeightSource) -> None:
        """New weights between ``pause(mode="wait")`` and ``resume``: a directory reload or a transfer round."""
        await self.pause(mode="wait")
        try:
            if isinstance(source, WeightTransfer):
                await self._transfer(source)
            else:
                await self.collective_rpc("update_config", args=[{"model_config": {"model": str(source)}}])
                await self.collective_rpc("reload_weights")
                await self.http.request("POST", "/reset_prefix_cache")
        finally:
            await self.resume()

    async def _transfer(self, round_: WeightTransfer) -> None:
        if round_.init_info is not None and not self._transfer_ready:
            await self.init_weight_transfer_engine(round_.init_info)
        await self._optional("/start_weight_update", {"is_checkpoint_format": round_.is_checkpoint_format})
        await self.http.post_json("/update_weights", {"update_info": round_.update_info})
        await self._optional("/finish_weight_update", {})

    async def _optional(self, path: str, body: dict[str, Any]) -> None:
        try:
            await self.http.request("POST", path, json=body)
        except NotFound:  # a vLLM from before the explicit start/finish calls: the round works without them
            return

    async def init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        """``POST /init_weight_transfer_engine`` (once per server, before the first transfer round)."""
        await self.http.post_json("/init_weight_transfer_engine", {"init_info": init_info})
        self._transfer_ready = True

    async def collective_rpc(self, method: str, *, args: list[Any] | None = None,
                             kwargs: dict[str, Any] | None = None, timeout_s: float | None = None) -> Any:
        """``POST /collective_rpc``: call ``method`` on every worker; returns the workers' results."""
        body: dict[str, Any] = {"method": method, "args": args or [], "kwargs": kwargs or {}}
        if timeout_s is not None:
            body["timeout"] = timeout_s
        return (await self.http.post_json("/collective_rpc", body)).get("results")

    async def pause(self, mode: str = "wait") -> None:
        """``POST /pause?mode=`` (``wait``: in-flight requests finish; ``abort``; ``keep``)."""
        await self.http.request("POST", "/pause", params={"mode": mode})

    async def resume(self) -> None:
        """``POST /resume``."""
        await self.http.request("POST", "/resume")

    async def sleep(self, level: int = 1) -> None:
        """``POST /sleep?level=`` (1: offload weights, drop the KV cache; 2: drop both)."""
        await self.http.request("POST", "/sleep", params={"level": level})

    async def wake_up(self, tags: list[str] | None = None) -> None:
        """``POST /wake_up`` (optionally only ``tags`` such as ``weights`` or ``kv_cache``)."""
        await self.http.request("POST", "/wake_up", params=[("tags", t) for t in tags or []])

    async def is_sleeping(self) -> bool:
        """``GET /is_sleeping``."""
        return bool((await self.http.get_json("/is_sleeping"))["is_sleeping"])

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

    async def pause(self, mode: str = "wait") -> None:
        """Pause both servers."""
        await self.prefill.pause(mode)
        await super().pause(mode)

    async def update_weights(self, source: WeightSource) -> None:
        """The same weights into the prefill server, then the decode server."""
        await self.prefill.update_weights(source)
        await super().update_weights(source)

    async def sleep(self, level: int = 1) -> None:
        """Put both servers to sleep."""
        await self.prefill.sleep(level)
        await super().sleep(level)

    async def wake_up(self, tags: list[str] | None = None) -> None:
        """Wake both servers."""
        await self.prefill.wake_up(tags)
        await super().wake_up(tags)

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
