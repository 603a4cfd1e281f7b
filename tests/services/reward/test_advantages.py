"""Advantage estimators against hand-computed values, including ragged per-step groups."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.reward.advantages import (
    broadcast_final,
    generation_mask,
    grpo,
    grpo_batch,
    grpo_per_step,
    reinforce_pp,
    rloo,
    rloo_batch,
)


def test_grpo_hand_computed() -> None:
    # mean 0.5, population std 0.5 -> ±1
    assert grpo([1.0, 0.0, 1.0, 0.0]) == pytest.approx([1, -1, 1, -1], abs=1e-6)
    adv = grpo([3.0, 1.0])
    assert adv == pytest.approx([1.0, -1.0], abs=1e-6)


def test_grpo_zero_std_gives_zero_not_nan() -> None:
    adv = grpo([0.7, 0.7, 0.7])
    assert np.all(adv == 0.0)


def test_grpo_batch_matches_per_group() -> None:
    rng = np.random.default_rng(0)
    rewards = rng.random((5, 4))
    batch = grpo_batch(rewards)
    for g in range(5):
        assert batch[g] == pytest.approx(grpo(rewards[g]))


def test_rloo_hand_computed() -> None:
    # r = [1, 2, 3]: baselines (2+3)/2, (1+3)/2, (1+2)/2
    assert rloo([1.0, 2.0, 3.0]) == pytest.approx([-1.5, 0.0, 1.5])
    assert rloo([4.0]) == pytest.approx([0.0])
    assert rloo_batch(np.array([[1.0, 2.0, 3.0]]))[0] == pytest.approx([-1.5, 0.0, 1.5])


def test_reinforce_pp_global_whitening() -> None:
    r = np.array([[1.0, 0.0], [1.0, 1.0]])
    centred = r - r.mean()                      # mean 0.75
    expected = centred / (centred.std() + 1e-8)
    assert reinforce_pp(r) == pytest.approx(expected)
    grouped = reinforce_pp(r, group_baseline=True)
    # group-centred [[0.5, -0.5], [0, 0]]; whitened by the batch std sqrt(0.5 / 4)
    assert grouped[1] == pytest.approx([0.0, 0.0])
    assert grouped[0] == pytest.approx([0.5 / math.sqrt(0.125), -0.5 / math.sqrt(0.125)], rel=1e-6)


def test_per_step_ragged_groups_mask_missing_steps() -> None:
    steps = [[1.0, 0.0, 1.0], [0.0, 1.0], [1.0]]
    adv, masks = grpo_per_step(steps, min_group_size=2)
    # step 0: [1,0,1] mean 2/3, std sqrt(2)/3
    std0 = math.sqrt(2) / 3
    assert adv[0][0] == pytest.approx((1 - 2 / 3) / (std0 + 1e-8))
    assert adv[1][0] == pytest.approx((0 - 2 / 3) / (std0 + 1e-8))
    # step 1: [0,1] -> ∓1; step 2 has one member -> below min group size
    assert adv[0][1] == pytest.approx(-1.0, abs=1e-6) and adv[1][1] == pytest.approx(1.0, abs=1e-6)
    assert adv[0][2] == 0.0 and masks[0] == [1, 1, 0]
    assert masks[1] == [1, 1] and masks[2] == [1]
    assert [len(a) for a in adv] == [3, 2, 1]


def test_per_step_zero_std_modes() -> None:
    steps = [[1.0, 0.5], [1.0, 0.0]]
    adv, masks = grpo_per_step(steps)
    assert adv[0][0] == 0.0 and masks[0][0] == 1
    adv, masks = grpo_per_step(steps, zero_std="mask")
    assert masks[0] == [0, 1] and masks[1] == [0, 1]


def test_broadcast_final_and_generation_mask() -> None:
    assert broadcast_final([1.0, 0.0], [3, 1]) == [[1.0, 1.0, 1.0], [0.0]]
    segments = [("prompt", 3), ("sampled", 2), ("observation", 2), ("sampled", 1)]
    assert generation_mask(segments) == [0, 0, 0, 1, 1, 0, 0, 1]
