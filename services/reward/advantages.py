"""Advantage estimators (numpy): GRPO outcome and per-step, RLOO, REINFORCE++, generation masks.

Ragged groups: per-step GRPO lays a group out as a (members × steps) matrix with
NaN where a member has no such step. A step's advantage is computed only from
the members that have it; steps with fewer than ``min_group_size`` members get
advantage 0 and mask 0. A step whose rewards are all equal (std 0) gets
advantage 0; with ``zero_std="mask"`` it is also masked out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, cast

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "EPS", "broadcast_final", "generation_mask", "grpo", "grpo_batch", "grpo_per_step",
    "reinforce_pp", "rloo", "rloo_batch",
]

EPS = 1e-8
Floats = NDArray[np.float64]
ZeroStd = Literal["zero", "mask"]


_ZERO_STD = 1e-12


def _normalised(centred: Floats, std: Floats, eps: float) -> Floats:
    # Equal rewards leave float noise in (r − mean); dividing it by eps would make it look like signal.
    return np.where(std > _ZERO_STD, centred / (std + eps), 0.0)


def grpo(rewards: Sequence[float], *, eps: float = EPS) -> Floats:
    """(r − mean) / (std + eps) within one group (population std); 0 when all rewards are equal."""
    r = np.asarray(rewards, dtype=np.float64)
    if r.size == 0:
        return r
    return _normalised(r - r.mean(), np.full_like(r, r.std()), eps)


def grpo_batch(rewards: NDArray[np.floating], *, eps: float = EPS) -> Floats:
    """GRPO for a (groups × members) matrix, one vectorised pass."""
    r = np.asarray(rewards, dtype=np.float64)
    return _normalised(r - r.mean(axis=1, keepdims=True), r.std(axis=1, keepdims=True), eps)


def rloo(rewards: Sequence[float]) -> Floats:
    """Leave-one-out baseline: r_i − mean of the other members (0 for a group of one)."""
    r = np.asarray(rewards, dtype=np.float64)
    if r.size < 2:
        return np.zeros_like(r)
    return cast(Floats, r - (r.sum() - r) / (r.size - 1))


def rloo_batch(rewards: NDArray[np.floating]) -> Floats:
    """RLOO for a (groups × members) matrix."""
    r = np.asarray(rewards, dtype=np.float64)
    n = r.shape[1]
    if n < 2:
        return np.zeros_like(r)
    return cast(Floats, r - (r.sum(axis=1, keepdims=True) - r) / (n - 1))


def reinforce_pp(rewards: NDArray[np.floating], *, group_baseline: bool = False, eps: float = EPS) -> Floats:
    """REINFORCE++: subtract the batch mean (or each group's mean), then whiten over the whole batch."""
    r = np.asarray(rewards, dtype=np.float64)
    if r.size == 0:
        return r
    centred = r - (r.mean(axis=-1, keepdims=True) if group_baseline and r.ndim == 2 else r.mean())
    return _normalised(centred, np.full_like(centred, centred.std()), eps)


def _ragged(step_rewards: Sequence[Sequence[float]]) -> Floats:
    width = max((len(s) for s in step_rewards), default=0)
    grid = np.full((len(step_rewards), width), np.nan)
    for i, steps in enumerate(step_rewards):
        grid[i, : len(steps)] = np.asarray(steps, dtype=np.float64)
    return grid


def grpo_per_step(step_rewards: Sequence[Sequence[float]], *, min_group_size: int = 2,
                  zero_std: ZeroStd = "zero", eps: float = EPS) -> tuple[list[list[float]], list[list[int]]]:
    """A_{i,t} = (r_{i,t} − mean_t) / (std_t + eps) over members that have step t; plus masks."""
    grid = _ragged(step_rewards)
    present = ~np.isnan(grid)
    counts = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(grid, axis=0) / np.maximum(counts, 1)
        var = np.nansum((grid - mean) ** 2, axis=0) / np.maximum(counts, 1)
    std = np.sqrt(var)
    adv = np.where(present, _normalised(np.nan_to_num(grid) - mean, np.broadcast_to(std, grid.shape), eps), 0.0)
    valid = present & (counts >= min_group_size)
    if zero_std == "mask":
        valid &= std > _ZERO_STD
    adv = np.where(valid, adv, 0.0)
    lengths = [len(s) for s in step_rewards]
    return ([adv[i, :n].tolist() for i, n in enumerate(lengths)],
            [valid[i, :n].astype(int).tolist() for i, n in enumerate(lengths)])


def broadcast_final(final_rewards: Sequence[float], steps: Sequence[int]) -> list[list[float]]:
    """Each trajectory's final reward repeated at every one of its steps."""
    return [[float(r)] * int(n) for r, n in zip(final_rewards, steps, strict=True)]


def generation_mask(segments: Sequence[tuple[str, int]]) -> list[int]:
    """Token mask from (kind, length) segments: 1 only on ``sampled`` tokens (thought/action)."""
    mask: list[int] = []
    for kind, length in segments:
        mask.extend([1 if kind == "sampled" else 0] * int(length))
    return mask
