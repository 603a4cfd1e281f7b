"""SGLang's native ``/generate`` on the local engine: token ids in, ids and logprobs out.

This lets SGLang clients (and the ``sglang`` backend) use the local engine as is.
Fields follow SGLang: ``sampling_params.max_new_tokens``, ``return_logprob``,
``meta_info.output_token_logprobs`` as ``[logprob, token_id, None]`` triples,
``finish_reason`` as ``{"type", "matched"}``; ``n`` > 1 answers a list.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from services.inference.engine import Engine
from services.inference.params import CompletionOutput, GenParams
from services.inference.service import new_id
from shared.errors import InvalidInput

__all__ = ["NativeGenerateRequest", "NativeSampling", "native_generate"]


class NativeSampling(BaseModel):
    """SGLang ``sampling_params`` (the subset the engine honours)."""

    model_config = ConfigDict(extra="ignore")

    max_new_tokens: int = Field(128, ge=0)
    temperature: float = Field(1.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    top_k: int = -1
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    n: int = Field(1, ge=1, le=64)
    sampling_seed: int | None = None


class NativeGenerateRequest(BaseModel):
    """``POST /generate``."""

    model_config = ConfigDict(extra="ignore")

    input_ids: list[int] | None = None
    text: str | None = None
    sampling_params: NativeSampling = Field(default_factory=NativeSampling)
    return_logprob: bool = False
    logprob_start_len: int = -1


def _params(s: NativeSampling) -> GenParams:
    stop = [s.stop] if isinstance(s.stop, str) else list(s.stop or [])
    return GenParams(temperature=s.temperature, top_p=s.top_p, top_k=s.top_k, max_tokens=max(1, s.max_new_tokens),
                     stop=stop, stop_token_ids=s.stop_token_ids or [], n=s.n, seed=s.sampling_seed, logprobs=True)


def _input_logprobs(scores: list[float | None], ids: list[int], start: int) -> list[list[Any]]:
    begin = max(0, start)
    return [[scores[i] if i > 0 else None, ids[i], None] for i in range(begin, len(ids))]


def _item(out: CompletionOutput, prompt_len: int, req: NativeGenerateRequest) -> dict[str, Any]:
    matched = out.stop_reason if out.stop_reason is not None else None
    meta: dict[str, Any] = {"id": new_id("gen"), "prompt_tokens": prompt_len, "completion_tokens": len(out.token_ids),
                            "finish_reason": {"type": "length" if out.finish_reason == "length" else "stop",
                                              "matched": matched}}
    if req.return_logprob:
        meta["output_token_logprobs"] = [[lp, t, None] for lp, t in zip(out.logprobs, out.token_ids, strict=True)]
    return {"text": out.text, "output_ids": out.token_ids, "meta_info": meta}


async def native_generate(engine: Engine, req: NativeGenerateRequest) -> dict[str, Any] | list[dict[str, Any]]:
    """Run ``/generate``; ``max_new_tokens`` 0 only scores the input (input logprobs)."""
    if (req.input_ids is None) == (req.text is None):
        raise InvalidInput("Give exactly one of 'input_ids' or 'text'.", param="input_ids")
    ids = req.input_ids if req.input_ids is not None else engine.encode(req.text or "")
    if req.sampling_params.max_new_tokens == 0:
        scores = await engine.score(ids)
        meta = {"id": new_id("gen"), "prompt_tokens": len(ids), "completion_tokens": 0,
                "finish_reason": {"type": "length", "matched": None},
                "input_token_logprobs": _input_logprobs(scores, ids, req.logprob_start_len)}
        return {"text": "", "output_ids": [], "meta_info": meta}
    outs = await engine.generate(ids, _params(req.sampling_params))
    items = [_item(o, len(ids), req) for o in outs]
    return items if len(items) > 1 else items[0]
