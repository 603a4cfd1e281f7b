"""The trainable copy of the local model: per-token log-probabilities, one clipped-PG step, saving.

It starts from the same weights the local engine serves (the same loader and cache), keeps a frozen
reference copy for the KL term, and writes HF model directories that the engine's
``update_weights_from_disk`` reads back.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.inference.loader import load_model, resolve_source
from services.inference.train.loss import LossParts, clipped_kl_loss_torch

__all__ = ["StepReport", "TrainRow", "TrainablePolicy"]


@dataclass(slots=True)
class TrainRow:
    """One trajectory of the token-level export, as the gradient step reads it."""

    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    logprobs: list[float]
    advantages: list[float]


@dataclass(slots=True)
class StepReport:
    """What one optimiser step did."""

    rows: int
    tokens: int
    seconds: float
    parts: list[LossParts] = field(default_factory=list)
    grad_norm: float = 0.0


def _pad(rows: list[TrainRow]) -> tuple[Any, Any, list[int]]:
    import torch

    seqs = [r.prompt_ids + r.response_ids for r in rows]
    width = max(len(s) for s in seqs)
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
        attention[i, : len(s)] = 1
    return ids, attention, [len(r.prompt_ids) for r in rows]


def _response_columns(rows: list[TrainRow], field_name: str, width: int) -> Any:
    import torch

    out = torch.zeros((len(rows), width), dtype=torch.float32)
    for i, row in enumerate(rows):
        values = [float(v or 0.0) for v in getattr(row, field_name)]
        out[i, : len(values)] = torch.tensor(values, dtype=torch.float32)
    return out


def _response_logprobs(logits: Any, ids: Any, rows: list[TrainRow], prompt_lens: list[int]) -> Any:
    """Log-probability of each row's response tokens from full-sequence logits: (rows, longest response)."""
    import torch

    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    width = max(len(r.response_ids) for r in rows)
    out = torch.zeros((len(rows), width), dtype=logp.dtype)
    for i, (row, start) in enumerate(zip(rows, prompt_lens, strict=True)):
        # Token t of the response is predicted at position start + t - 1.
        out[i, : len(row.response_ids)] = logp[i, start - 1: start - 1 + len(row.response_ids)]
    return out


def _train_top_layers(model: Any, count: int) -> None:
    """Freeze everything but the top ``count`` decoder layers and the final norm."""
    body = getattr(model, "model", None)
    layers = getattr(body, "layers", None)
    if layers is None:
        raise ValueError(f"{type(model).__name__} has no model.layers; set trainable_layers to 0")
    for p in model.parameters():
        p.requires_grad_(False)
    for module in [*list(layers)[-count:], getattr(body, "norm", None)]:
        if module is not None:
            for p in module.parameters():
                p.requires_grad_(True)


class TrainablePolicy:
    """A causal LM being trained with the clipped policy-gradient loss, plus its frozen reference."""

    def __init__(self, model: Any, tokenizer: Any, *, learning_rate: float, micro_batch: int = 4,
                 trainable_layers: int = 0) -> None:
        import torch

        self.model, self.tokenizer = model, tokenizer
        self.reference = copy.deepcopy(model).eval()
        for p in self.reference.parameters():
            p.requires_grad_(False)
        if trainable_layers:
            _train_top_layers(model, trainable_layers)
        params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=learning_rate, weight_decay=0.0)
        self.micro_batch = micro_batch
        self.trainable_layers = trainable_layers

    @classmethod
    def load(cls, model_path: str, *, cache_dir: Path, learning_rate: float,
             trainable_layers: int = 0) -> TrainablePolicy:
        """The model at ``model_path`` (empty: the engine's bundled model, from the same cache)."""
        loaded = load_model(resolve_source(model_path), cache_dir=cache_dir)
        return cls(loaded.model, loaded.tokenizer, learning_rate=learning_rate, trainable_layers=trainable_layers)

    def token_logprobs(self, model: Any, rows: list[TrainRow]) -> Any:
        """Log-probability of each response token under ``model``: shape (rows, longest response)."""
        ids, attention, prompt_lens = _pad(rows)
        logits = model(input_ids=ids, attention_mask=attention, use_cache=False).logits
        return _response_logprobs(logits, ids, rows, prompt_lens)

    def policy_and_reference_logprobs(self, rows: list[TrainRow]) -> tuple[Any, Any]:
        """Response-token log-probabilities under the policy (with gradients) and the frozen reference.

        When only the top layers train, the layers below are the same weights in both models, so
        the reference reuses the policy's hidden state at the first trainable layer and runs just its
        own top layers: one pass through the frozen bottom instead of two.
        """
        import torch

        if not self.trainable_layers:
            with torch.no_grad():
                ref = self.token_logprobs(self.reference, rows)
            return self.token_logprobs(self.model, rows), ref
        ids, attention, prompt_lens = _pad(rows)
        seen: dict[str, Any] = {}

        def capture(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            seen["hidden"] = args[0] if args else kwargs["hidden_states"]
            seen["kwargs"] = {k: v for k, v in kwargs.items() if k != "hidden_states"}

        start = max(0, len(self.model.model.layers) - self.trainable_layers)
        handle = self.model.model.layers[start].register_forward_pre_hook(capture, with_kwargs=True)
        try:
            # No cache: the reference's layers must not append to the policy's key/value cache.
            logits = self.model(input_ids=ids, attention_mask=attention, use_cache=False).logits
        finally:
            handle.remove()
        with torch.no_grad():
            hidden = seen["hidden"].detach()
            for layer in self.reference.model.layers[start:]:
                hidden = layer(hidden, **seen["kwargs"])
            ref_logits = self.reference.lm_head(self.reference.model.norm(hidden))
            ref = _response_logprobs(ref_logits, ids, rows, prompt_lens)
        return _response_logprobs(logits, ids, rows, prompt_lens), ref

    def step(self, rows: list[TrainRow], *, clip_eps: float, kl_coef: float, max_grad_norm: float) -> StepReport:
        """One optimiser step on ``rows``: the token-mean clipped loss over the whole batch."""
        import torch

        started = time.perf_counter()
        total = sum(sum(r.response_mask) for r in rows)
        report = StepReport(rows=len(rows), tokens=total, seconds=0.0)
        if not rows or total == 0:
            return report
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        for at in range(0, len(rows), self.micro_batch):
            chunk = rows[at: at + self.micro_batch]
            width = max(len(r.response_ids) for r in chunk)
            mask = _response_columns(chunk, "response_mask", width)
            new, ref = self.policy_and_reference_logprobs(chunk)
            loss, parts = clipped_kl_loss_torch(
                new, _response_columns(chunk, "logprobs", width), ref, _response_columns(chunk, "advantages", width),
                mask, clip_eps=clip_eps, kl_coef=kl_coef)
            # Weighted by the chunk's share of tokens: the sum is the mean over the whole batch.
            (loss * (float(mask.sum()) / total)).backward()  # type: ignore[no-untyped-call]
            report.parts.append(parts)
        report.grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_grad_norm))
        self.optimizer.step()
        self.model.eval()
        report.seconds = time.perf_counter() - started
        return report

    def save(self, folder: Path) -> Path:
        """Write the current weights (and tokenizer) as an HF model directory."""
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        return folder
