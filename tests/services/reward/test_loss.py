"""The reference clipped-ratio + KL loss against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from services.reward.loss import clipped_kl_loss


def test_clipped_kl_loss_hand_computed() -> None:
    # token 1: ratio e^0.5 ≈ 1.6487, A=+1 -> clipped to 1.2; token 2: ratio 1, A=-2 -> -2;
    # token 3 masked out. KL k3 at token 1: ref-new = -0.5 -> e^-0.5 + 0.5 - 1; token 2: 0.
    report = clipped_kl_loss(logp_new=[-0.5, -1.0, -3.0], logp_old=[-1.0, -1.0, -1.0],
                             logp_ref=[-1.0, -1.0, -1.0], advantages=[1.0, -2.0, 5.0], mask=[1, 1, 0],
                             clip_eps=0.2, kl_coef=0.1)
    policy = -((1.2) + (-2.0)) / 2
    kl = (math.exp(-0.5) + 0.5 - 1.0) / 2
    assert report.policy_loss == pytest.approx(policy)
    assert report.kl == pytest.approx(kl)
    assert report.loss == pytest.approx(policy + 0.1 * kl)
    assert report.clip_fraction == pytest.approx(0.5)


def test_negative_advantage_takes_the_pessimistic_side() -> None:
    # ratio 0.5 with A=-1: unclipped -0.5, clipped 0.8*-1 = -0.8 -> min = -0.8
    report = clipped_kl_loss([math.log(0.5)], [0.0], [math.log(0.5)], [-1.0], [1])
    assert report.policy_loss == pytest.approx(0.8)
    assert report.kl == pytest.approx(0.0)
