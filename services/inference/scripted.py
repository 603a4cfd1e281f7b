"""A scripted policy: fixed replies served through the real engine path.

For tests that need a known output (a tool call, say) from a model too small
to produce it: the reply is tokenised by the real tokenizer and every row of a
wave emits it token by token, then end-of-sequence. Logits are one-hot, so the
sampled tokens' logprobs are 0. Label any result built on it as scripted.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

__all__ = ["scripted_model"]


@dataclass
class _StepCache:
    """Stands in for a KV cache: only the number of steps taken matters."""

    step: int = 0

    def batch_select_indices(self, indices: Any) -> None:
        """Rows leave the batch; every row shares the same step, so nothing to do."""


def _build(reply_ids: list[int], eos_id: int, vocab_size: int) -> Any:
    import torch

    class _Scripted(torch.nn.Module):
        """Emits the script one token per step; every row of a wave is at the same step."""

        def __init__(self) -> None:
            super().__init__()
            self.script = [*reply_ids, eos_id]
            self.config = SimpleNamespace(vocab_size=vocab_size, max_position_embeddings=4096)
            self.generation_config = SimpleNamespace(eos_token_id=eos_id)

        def forward(self, input_ids: Any, attention_mask: Any = None, position_ids: Any = None,
                    cache: Any = None, use_cache: bool = True) -> Any:
            """One-hot logits on the next scripted token."""
            step = 0 if cache is None else cache.step + 1
            token = self.script[min(step, len(self.script) - 1)]
            # Generation reads only the last position; a full (batch, seq, vocab) tensor of a long
            # prompt costs hundreds of MB per prefill, so only scoring (no cache) gets every position.
            width = input_ids.shape[1] if not use_cache else 1
            logits = torch.full((input_ids.shape[0], width, vocab_size), -1e4)
            logits[:, -1, token] = 0.0
            return SimpleNamespace(logits=logits, cache=_StepCache(step))

    return _Scripted()


def scripted_model(tokenizer: Any, text: str) -> Any:
    """A torch module that always replies ``text`` (tokenised by the real ``tokenizer``)."""
    ids = [int(i) for i in tokenizer(text, add_special_tokens=False)["input_ids"]]
    return _build(ids, int(tokenizer.eos_token_id), len(tokenizer))
