"""Advantage estimators (numpy) and the one group-advantage function every caller uses.

``group_advantages`` (outcome rewards: GRPO, RLOO, REINFORCE++) and
``step_advantages`` (per-step GRPO) are what both the rollout shard and
``POST /v1/advantages`` run, so one group gives the same numbers either way.

Missing rewards: a member whose reward is ``None`` or non-finite is left out
of the group's statistics and gets advantage 0 with mask 0; the result always
has one entry per member (per step for per-step GRPO) and ``error`` says how
many were masked. A group with fewer than ``min_group_size`` usable members
is all masked.

On-policy distillation: ``distillation_advantages`` gives the per-token
reverse-KL advantage of a student's sampled tokens under a teacher,
``A_t = -(log pi_student(x_t) - log pi_teacher(x_t)) = log pi_teacher - log pi_student``.
The sampled-token estimate of the reverse KL ``KL(student || teacher)`` is
``log pi_student - log pi_teacher``; minimising it is maximising its negative,
so the advantage is positive where the teacher likes the token more than the
student did (push it up) and negative where less (push it down).
``token_advantages`` weighs it against the reward advantage per token.

Ragged groups: per-step GRPO lays a group out as a (members × steps) matrix
with NaN where a member has no such step (or its step reward is missing). A
step's advantage is computed only from the members that have it; steps with
fewer than ``min_group_size`` members get advantage 0 and mask 0. A step whose
rewards are all equal (std 0) gets advantage 0; with ``zero_std="mask"`` it is
also masked out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel

__all__ = [
    "EPS", "Estimator", "Floats", "GroupAdvantages", "StepAdvantages", "ZeroStd", "broadcast_final",
    "distillation_advantages", "generation_mask", "group_advantages", "grpo", "grpo_batch", "grpo_per_step",
    "reinforce_pp", "rloo", "rloo_batch", "step_advantages", "token_advantages",
]

EPS = 1e-8
Floats = NDArray[np.float64]
ZeroStd = Literal["zero", "mask"]
Estimator = Literal["grpo", "rloo", "reinforce_pp"]


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


def _usable(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _ragged(step_rewards: Sequence[Sequence[float | None]]) -> Floats:
    width = max((len(s) for s in step_rewards), default=0)
    grid = np.full((len(step_rewards), width), np.nan)
    for i, steps in enumerate(step_rewards):
        grid[i, : len(steps)] = [float(v) if v is not None and _usable(v) else np.nan for v in steps]
    return grid


def grpo_per_step(step_rewards: Sequence[Sequence[float | None]], *, min_group_size: int = 2,
                  zero_std: ZeroStd = "zero", eps: float = EPS) -> tuple[list[list[float]], list[list[int]]]:
    """A_{i,t} = (r_{i,t} − mean_t) / (std_t + eps) over members that have step t; plus masks.

    A ``None`` or non-finite step reward counts as a missing step: advantage 0, mask 0.
    """
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


class GroupAdvantages(BaseModel):
    """One advantage and one mask bit per member, in member order."""

    advantages: list[float]
    mask: list[int]
    error: str | None = None


class StepAdvantages(BaseModel):
    """Per member, one advantage and one mask bit per step."""

    advantages: list[list[float]]
    mask: list[list[int]]
    error: str | None = None


_OUTCOME: dict[str, Callable[[Any], Floats]] = {"grpo": grpo, "rloo": rloo, "reinforce_pp": reinforce_pp}


def group_advantages(rewards: Sequence[float | None], *, estimator: Estimator = "grpo", min_group_size: int = 2,
                     zero_std: ZeroStd = "zero") -> GroupAdvantages:
    """Outcome advantages of one group; missing rewards are masked, never dropped."""
    good = [i for i, r in enumerate(rewards) if _usable(r)]
    adv = [0.0] * len(rewards)
    missing = len(rewards) - len(good)
    error = f"{missing} missing or non-finite rewards masked" if missing else None
    keep: set[int] = set()
    if len(good) >= min_group_size:
        values = np.array([rewards[i] for i in good], dtype=np.float64)
        for i, a in zip(good, _OUTCOME[estimator](values), strict=True):
            adv[i] = float(a)
        if not (zero_std == "mask" and float(values.std()) <= _ZERO_STD):
            keep = set(good)
    return GroupAdvantages(advantages=adv, mask=[int(i in keep) for i in range(len(rewards))], error=error)


def step_advantages(step_rewards: Sequence[Sequence[float | None]], *, min_group_size: int = 2,
                    zero_std: ZeroStd = "zero") -> StepAdvantages:
    """Per-step GRPO of one group; a missing step reward is masked, every member keeps every step."""
    missing = sum(1 for steps in step_rewards for r in steps if not _usable(r))
    adv, mask = grpo_per_step(step_rewards, min_group_size=min_group_size, zero_std=zero_std)
    error = f"{missing} missing or non-finite step rewards masked" if missing else None
    return StepAdvantages(advantages=adv, mask=mask, error=error)


def distillation_advantages(student: Sequence[float | None], teacher: Sequence[float | None],
                            mask: Sequence[int] | None = None) -> list[float]:
    """Per-token reverse-KL advantage ``teacher - student`` (see the module docstring).

    0 where the token was not sampled (``mask`` 0) or either logprob is missing or non-finite.
    """
    if len(student) != len(teacher) or (mask is not None and len(mask) != len(student)):
        raise ValueError(f"distillation needs aligned tokens: {len(student)} student logprobs, "
                         f"{len(teacher)} teacher logprobs, {len(mask) if mask is not None else '-'} mask bits")
    keep = mask if mask is not None else [1] * len(student)
    return [float(t) - float(s) if k and _usable(s) and _usable(t) else 0.0  # type: ignore[arg-type]
            for s, t, k in zip(student, teacher, keep, strict=True)]


def token_advantages(reward: Sequence[float], distill: Sequence[float] | None, *, reward_weight: float = 1.0,
                     distill_weight: float = 1.0) -> list[float]:
    """``reward_weight * reward + distill_weight * distill`` per token (reward alone without a teacher)."""
    if distill is None:
        return [float(a) for a in reward]
    if len(distill) != len(reward):
        raise ValueError(f"{len(reward)} reward advantages for {len(distill)} distillation advantages")
    return [reward_weight * float(a) + distill_weight * float(d) for a, d in zip(reward, distill, strict=True)]
