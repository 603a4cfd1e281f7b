"""Reference clipped-ratio policy loss with a KL penalty (numpy), for trainers that want it."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel

__all__ = ["LossReport", "clipped_kl_loss"]


class LossReport(BaseModel):
    """Loss and its parts, averaged over masked tokens."""

    loss: float
    policy_loss: float
    kl: float
    clip_fraction: float


def clipped_kl_loss(logp_new: ArrayLike, logp_old: ArrayLike, logp_ref: ArrayLike, advantages: ArrayLike,
                    mask: ArrayLike, *, clip_eps: float = 0.2, kl_coef: float = 0.01) -> LossReport:
    """−mean[min(ρA, clip(ρ, 1±ε)A)] + β·mean[KL_k3(π‖π_ref)] over tokens where mask is 1."""
    new, old, ref = (np.asarray(x, dtype=np.float64) for x in (logp_new, logp_old, logp_ref))
    adv = np.asarray(advantages, dtype=np.float64)
    m = np.asarray(mask, dtype=np.float64)
    tokens = max(m.sum(), 1.0)
    ratio = np.exp(new - old)
    surrogate = np.minimum(ratio * adv, np.clip(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    # k3 estimator: unbiased, always ≥ 0, low variance for small policy moves.
    log_ref_ratio = ref - new
    kl = np.exp(log_ref_ratio) - log_ref_ratio - 1.0
    policy_loss = -(surrogate * m).sum() / tokens
    kl_mean = (kl * m).sum() / tokens
    clipped = (np.abs(ratio - 1.0) > clip_eps) & (m > 0)
    return LossReport(loss=float(policy_loss + kl_coef * kl_mean), policy_loss=float(policy_loss),
                      kl=float(kl_mean), clip_fraction=float(clipped.sum() / tokens))
