"""The token-level export as the batches TRL's and verl's trainers read, from a ``datasets`` table.

Column names are the trainers' own: TRL's GRPO trainer batch (``prompt_ids``, ``prompt_mask``,
``completion_ids``, ``completion_mask``, ``old_per_token_logps``, ``advantages``) and verl's
``DataProto`` batch (``prompts``, ``responses``, ``input_ids``, ``attention_mask``, ``position_ids``,
``response_mask``, ``old_log_probs``, ``advantages``, ``token_level_scores``; ``uid`` groups a
prompt's samples). Prompts are left-padded and responses right-padded, as both expect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["trl_batch", "verl_batch"]


def _left(rows: Sequence[Sequence[float]], pad: float) -> tuple[list[list[float]], list[list[int]]]:
    width = max((len(r) for r in rows), default=0)
    return ([[pad] * (width - len(r)) + list(r) for r in rows],
            [[0] * (width - len(r)) + [1] * len(r) for r in rows])


def _right(rows: Sequence[Sequence[float | None]], pad: float) -> list[list[float]]:
    width = max((len(r) for r in rows), default=0)
    return [[pad if v is None else v for v in r] + [pad] * (width - len(r)) for r in rows]


def trl_batch(columns: Mapping[str, Sequence[Any]], *, pad_token_id: int = 0) -> dict[str, Any]:
    """TRL GRPO's batch keys from export columns (a ``datasets`` batch or table slice), as torch tensors."""
    import torch

    prompt_ids, prompt_mask = _left(columns["prompt_ids"], pad_token_id)
    return {
        "prompt_ids": torch.tensor(prompt_ids, dtype=torch.long),
        "prompt_mask": torch.tensor(prompt_mask, dtype=torch.long),
        "completion_ids": torch.tensor(_right(columns["response_ids"], pad_token_id), dtype=torch.long),
        "completion_mask": torch.tensor(_right(columns["response_mask"], 0), dtype=torch.long),
        "old_per_token_logps": torch.tensor(_right(columns["logprobs"], 0.0), dtype=torch.float32),
        # TRL's advantages are one scalar per completion.
        "advantages": torch.tensor([a or 0.0 for a in columns["advantage"]], dtype=torch.float32),
    }


def verl_batch(columns: Mapping[str, Sequence[Any]], *, pad_token_id: int = 0) -> dict[str, Any]:
    """verl ``DataProto`` tensors (``batch``) and ``uid`` (``non_tensor_batch``) from export columns."""
    import torch

    prompts, prompt_mask = _left(columns["prompt_ids"], pad_token_id)
    responses = _right(columns["response_ids"], pad_token_id)
    response_mask = _right(columns["response_mask"], 0)
    lengths = [len(r) for r in columns["response_ids"]]
    attention = [p + [1] * n + [0] * (len(responses[0]) - n) for p, n in zip(prompt_mask, lengths, strict=True)]
    scores = [[0.0] * len(responses[0]) for _ in responses]
    for row, (n, reward) in enumerate(zip(lengths, columns["reward"], strict=True)):
        if n:
            scores[row][n - 1] = float(reward or 0.0)  # verl puts the sequence reward on the last token
    attention_t = torch.tensor(attention, dtype=torch.long)
    return {
        "prompts": torch.tensor(prompts, dtype=torch.long),
        "responses": torch.tensor(responses, dtype=torch.long),
        "input_ids": torch.cat([torch.tensor(prompts, dtype=torch.long), torch.tensor(responses, dtype=torch.long)], 1),
        "attention_mask": attention_t,
        "position_ids": (attention_t.cumsum(-1) - 1).clamp(min=0),
        "response_mask": torch.tensor(response_mask, dtype=torch.long),
        "old_log_probs": torch.tensor(_right(columns["logprobs"], 0.0), dtype=torch.float32),
        "advantages": torch.tensor(_right(columns["advantages"], 0.0), dtype=torch.float32),
        "token_level_scores": torch.tensor(scores, dtype=torch.float32),
        "uid": list(columns["group_id"]),
    }
