"""One wave of batched decoding: left-padded prefill, then KV-cached steps.

Rows leave the batch as soon as they finish or are cancelled (their KV rows are
dropped), so a finished or cancelled request stops costing compute at once.
"""

from __future__ import annotations

import inspect
from typing import Any

from services.inference.sampling import pick_token
from services.inference.sequence import Sequence

__all__ = ["run_wave"]


def _left_padded(rows: list[Sequence], pad_id: int) -> tuple[Any, Any]:
    import torch

    width = max(len(row.prompt_ids) for row in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, width - len(row.prompt_ids):] = torch.tensor(row.prompt_ids, dtype=torch.long)
        mask[i, width - len(row.prompt_ids):] = 1
    return ids, mask


def _sample_all(rows: list[Sequence], logits: Any) -> None:
    for i, row in enumerate(rows):
        if row.cancelled:
            row.abort()
            continue
        row.append(*pick_token(logits[i], row.params, row.generator))


def _keep_live(rows: list[Sequence], cache: Any, mask: Any, positions: Any) -> tuple[list[Sequence], Any, Any]:
    import torch

    keep = [i for i, row in enumerate(rows) if not row.finished]
    if len(keep) == len(rows):
        return rows, mask, positions
    index = torch.tensor(keep, dtype=torch.long)
    if keep:
        cache.batch_select_indices(index)
    return [rows[i] for i in keep], mask[index], positions[index]


def _cache_kwarg(model: Any) -> str:
    # transformers 5.x renamed ``past_key_values`` to ``cache``; accept both.
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _step(model: Any, kwarg: str, ids: Any, mask: Any, positions: Any, cache: Any) -> tuple[Any, Any]:
    out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, **{kwarg: cache})
    new_cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
    return out.logits[:, -1, :], new_cache


def run_wave(model: Any, rows: list[Sequence], *, pad_id: int) -> int:
    """Decode ``rows`` together until every row finished; returns the number of model steps."""
    import torch

    kwarg = _cache_kwarg(model)
    ids, mask = _left_padded(rows, pad_id)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    cache = None
    steps = 0
    with torch.inference_mode():
        while rows:
            logits, cache = _step(model, kwarg, ids, mask, positions, cache)
            steps += 1
            _sample_all(rows, logits)
            positions = positions[:, -1:] + 1
            rows, mask, positions = _keep_live(rows, cache, mask, positions)
            ids = torch.tensor([[row.token_ids[-1]] for row in rows], dtype=torch.long)
            mask = torch.cat([mask, torch.ones((len(rows), 1), dtype=torch.long)], dim=-1)
    return steps
