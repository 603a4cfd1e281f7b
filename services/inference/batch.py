"""Batched decoding with a shared KV cache: left-padded prefill, then one token per step.

Rows leave the batch as soon as they finish or are cancelled (their KV rows are
dropped). Between steps, rows waiting in the queue join the running batch: they
are prefilled on their own, then their cache is left-padded to the batch's
length and stacked onto it (continuous batching). Caches of other shapes than
transformers' plain ``DynamicLayer`` do not take joins; those rows wait for the
next wave.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from services.inference.sampling import pick_token
from services.inference.sequence import Sequence

__all__ = ["Admit", "OnStep", "run_wave"]

Admit = Callable[[int], list[Sequence]]  # up to n queued rows, never blocking
OnStep = Callable[[int], None]  # called with the batch size of every model step


class _Batch:
    """Rows in flight with their attention mask, positions and KV cache."""

    def __init__(self, rows: list[Sequence], mask: Any, positions: Any, cache: Any) -> None:
        self.rows, self.mask, self.positions, self.cache = rows, mask, positions, cache


def _left_padded(rows: list[Sequence], pad_id: int) -> tuple[Any, Any]:
    import torch

    width = max(len(row.prompt_ids) for row in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, width - len(row.prompt_ids):] = torch.tensor(row.prompt_ids, dtype=torch.long)
        mask[i, width - len(row.prompt_ids):] = 1
    return ids, mask


def _cache_kwarg(model: Any) -> str:
    # transformers 5.x renamed ``past_key_values`` to ``cache``; accept both.
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _forward(model: Any, ids: Any, batch: _Batch) -> Any:
    out = model(input_ids=ids, attention_mask=batch.mask, position_ids=batch.positions, use_cache=True,
                **{_cache_kwarg(model): batch.cache})
    batch.cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
    return out.logits[:, -1, :]


def _sample_all(rows: list[Sequence], logits: Any) -> None:
    for i, row in enumerate(rows):
        if row.cancelled:
            row.abort()
            continue
        row.append(*pick_token(logits[i], row.params, row.generator))


def _drop_finished(batch: _Batch) -> None:
    import torch

    keep = [i for i, row in enumerate(batch.rows) if not row.finished]
    if len(keep) == len(batch.rows):
        return
    index = torch.tensor(keep, dtype=torch.long)
    if keep:
        batch.cache.batch_select_indices(index)
    batch.rows, batch.mask, batch.positions = [batch.rows[i] for i in keep], batch.mask[index], batch.positions[index]


def _prefill(model: Any, rows: list[Sequence], pad_id: int, on_step: OnStep) -> _Batch:
    ids, mask = _left_padded(rows, pad_id)
    batch = _Batch(rows, mask, (mask.cumsum(-1) - 1).clamp(min=0), None)
    _sample_all(rows, _forward(model, ids, batch))
    on_step(len(rows))
    batch.positions = batch.positions[:, -1:] + 1
    _drop_finished(batch)
    return batch


def _joinable(cache: Any) -> bool:
    layers: Any = getattr(cache, "layers", None)
    return bool(layers) and all(type(layer).__name__ == "DynamicLayer" for layer in layers)


def _pad_left(tensor: Any, width: int, dim: int) -> Any:
    import torch

    missing = width - tensor.shape[dim]
    if missing == 0:
        return tensor
    shape = list(tensor.shape)
    shape[dim] = missing
    return torch.cat([torch.zeros(shape, dtype=tensor.dtype), tensor], dim=dim)


def _merge(into: _Batch, new: _Batch) -> None:
    import torch

    width = max(into.mask.shape[1], new.mask.shape[1])  # mask width == cached length here
    for old_layer, new_layer in zip(into.cache.layers, new.cache.layers, strict=True):
        old_layer.keys = torch.cat([_pad_left(old_layer.keys, width, 2), _pad_left(new_layer.keys, width, 2)])
        old_layer.values = torch.cat([_pad_left(old_layer.values, width, 2), _pad_left(new_layer.values, width, 2)])
    into.mask = torch.cat([_pad_left(into.mask, width, 1), _pad_left(new.mask, width, 1)])
    into.positions = torch.cat([into.positions, new.positions])
    into.rows = into.rows + new.rows


def _join(model: Any, batch: _Batch, admit: Admit, room: int, pad_id: int, on_step: OnStep) -> None:
    if room <= 0 or not batch.rows or not _joinable(batch.cache):
        return
    newcomers = admit(room)
    if not newcomers:
        return
    joined = _prefill(model, newcomers, pad_id, on_step)
    if joined.rows:  # rows that finished on their first token are already done
        _merge(batch, joined)


def run_wave(model: Any, rows: list[Sequence], *, pad_id: int, max_rows: int, admit: Admit,
             on_step: OnStep) -> None:
    """Decode ``rows`` (and rows admitted on the way) until every one has finished."""
    import torch

    with torch.inference_mode():
        batch = _prefill(model, rows, pad_id, on_step)
        while batch.rows:
            _join(model, batch, admit, max_rows - len(batch.rows), pad_id, on_step)
            ids = torch.tensor([[row.token_ids[-1]] for row in batch.rows], dtype=torch.long)
            batch.mask = torch.cat([batch.mask, torch.ones((len(batch.rows), 1), dtype=torch.long)], dim=-1)
            _sample_all(batch.rows, _forward(model, ids, batch))
            on_step(len(batch.rows))
            batch.positions = batch.positions + 1
            _drop_finished(batch)
