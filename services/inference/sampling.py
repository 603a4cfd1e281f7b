"""Pick the next token of each row: temperature, top-k, top-p, seeded generators.

Logprobs are the model's raw log-softmax (before temperature and truncation), as
vLLM reports them by default, so a trainer can compare them with its own.
"""

from __future__ import annotations

from typing import Any

from services.inference.params import GenParams, TopLogprob

__all__ = ["Pick", "pick_token"]

Pick = tuple[int, float, list[TopLogprob]]


def _filtered(logits: Any, params: GenParams) -> Any:
    import torch

    scaled = logits / params.temperature
    if params.top_k > 0 and params.top_k < scaled.shape[-1]:
        kth = torch.topk(scaled, params.top_k).values[-1]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if params.top_p < 1.0:
        sorted_vals, order = torch.sort(scaled, descending=True)
        cum = torch.softmax(sorted_vals, dim=-1).cumsum(dim=-1)
        # Drop a token when the mass before it already reaches top_p (the first always stays).
        drop_sorted = (cum - torch.softmax(sorted_vals, dim=-1)) >= params.top_p
        drop = torch.zeros_like(drop_sorted).scatter(0, order, drop_sorted)
        scaled = scaled.masked_fill(drop, float("-inf"))
    return scaled


def pick_token(logits: Any, params: GenParams, generator: Any) -> Pick:
    """Choose one token from a row of logits; returns (id, raw logprob, top alternatives)."""
    import torch

    raw = torch.log_softmax(logits.float(), dim=-1)
    if params.temperature == 0.0:
        token = int(torch.argmax(logits).item())
    else:
        probs = torch.softmax(_filtered(logits.float(), params), dim=-1)
        token = int(torch.multinomial(probs, 1, generator=generator).item())
    top: list[TopLogprob] = []
    if params.top_logprobs:
        values, ids = torch.topk(raw, params.top_logprobs)
        top = [TopLogprob(token_id=int(i), logprob=float(v)) for v, i in zip(values, ids, strict=True)]
    return token, float(raw[token].item()), top
