"""The clipped-ratio policy loss with a k3 KL penalty, in torch (differentiable).

The same formula as ``services/reward/loss.py::clipped_kl_loss`` (numpy, for reporting); a test pins
the two to the same numbers, so a trainer and the reward service agree on what "the loss" is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:
    import torch

__all__ = ["LossParts", "clipped_kl_loss_torch"]


class LossParts(BaseModel):
    """Loss and its parts as plain floats, averaged over masked tokens."""

    loss: float
    policy_loss: float
    kl: float
    clip_fraction: float


def clipped_kl_loss_torch(logp_new: torch.Tensor, logp_old: torch.Tensor, logp_ref: torch.Tensor,
                          advantages: torch.Tensor, mask: torch.Tensor, *, clip_eps: float = 0.2,
                          kl_coef: float = 0.01) -> tuple[torch.Tensor, LossParts]:
    """−mean[min(ρA, clip(ρ, 1±ε)A)] + β·mean[KL_k3(π‖π_ref)] over tokens where ``mask`` is 1.

    Returns the differentiable loss (gradients flow through ``logp_new`` only) and its parts.
    """
    import torch

    m = mask.to(logp_new.dtype)
    tokens = m.sum().clamp(min=1.0)
    ratio = torch.exp(logp_new - logp_old.detach())
    adv = advantages.detach()
    surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    log_ref_ratio = logp_ref.detach() - logp_new
    kl = torch.exp(log_ref_ratio) - log_ref_ratio - 1.0
    policy_loss = -(surrogate * m).sum() / tokens
    kl_mean = (kl * m).sum() / tokens
    loss = policy_loss + kl_coef * kl_mean
    clipped = ((ratio - 1.0).abs() > clip_eps) & (m > 0)
    parts = LossParts(loss=float(loss.detach()), policy_loss=float(policy_loss.detach()),
                      kl=float(kl_mean.detach()), clip_fraction=float(clipped.sum() / tokens))
    return loss, parts
