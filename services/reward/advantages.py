"""Advantage estimators: the shared implementation (``shared.advantages``), under the reward service's name."""

from __future__ import annotations

from shared.advantages import (
    EPS,
    Floats,
    broadcast_final,
    generation_mask,
    group_advantages,
    grpo,
    grpo_batch,
    grpo_per_step,
    reinforce_pp,
    rloo,
    rloo_batch,
    step_advantages,
)

__all__ = [
    "EPS", "Floats", "broadcast_final", "generation_mask", "group_advantages", "grpo", "grpo_batch",
    "grpo_per_step", "reinforce_pp", "rloo", "rloo_batch", "step_advantages",
]
