"""Scoring given tokens with vLLM's prompt-logprobs API (vLLM, and the local engine, speak it).

A scoring call is ``POST /v1/completions`` with the token ids as ``prompt``,
``prompt_logprobs: 0`` and ``max_tokens: 1`` (vLLM refuses 0). The answer's
``choices[0].prompt_logprobs`` has one entry per prompt token: ``None`` for the
first, then a map from token id (a string in JSON) to ``{"logprob", "rank",
"decoded_token"}`` holding at least the prompt's own token.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shared.errors import UpstreamError

__all__ = ["parse_prompt_logprobs", "prompt_logprobs_body"]


def prompt_logprobs_body(model: str, token_ids: Sequence[int]) -> dict[str, Any]:
    """The completions body that scores ``token_ids`` (greedy, one token generated, as vLLM needs)."""
    return {"model": model, "prompt": list(token_ids), "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 0}


def parse_prompt_logprobs(answer: dict[str, Any], token_ids: Sequence[int]) -> list[float | None]:
    """Each token's logprob given the ones before it (``None`` for the first), from a completions answer."""
    choices = answer.get("choices") or []
    entries = (choices[0].get("prompt_logprobs") if choices else None) or []
    if len(entries) != len(token_ids):
        raise UpstreamError(f"The upstream returned {len(entries)} prompt logprobs for {len(token_ids)} tokens.")
    out: list[float | None] = []
    for i, (entry, token) in enumerate(zip(entries, token_ids, strict=True)):
        if entry is None:
            if i:
                raise UpstreamError(f"The upstream gave no prompt logprob for token {i}.")
            out.append(None)
            continue
        picked = entry.get(str(token))
        if not isinstance(picked, dict) or "logprob" not in picked:
            raise UpstreamError(f"The upstream's prompt logprobs at position {i} miss the prompt's token {token}.")
        out.append(float(picked["logprob"]))
    return out
