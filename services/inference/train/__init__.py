"""The reference trainer: rounds of rollout → token-level export → policy-gradient step → weight update.

It talks to the suite only over the public REST API (``POST /v1/rollouts``, the job's group stream or
events, ``GET /v1/rollouts/{id}/export``, ``POST /inference/update_weights_from_disk``), so a
cluster's verl or TRL integration makes the same calls; only the gradient step runs here, on the
local model with torch (CPU).
"""

from services.inference.train.loss import clipped_kl_loss_torch
from services.inference.train.spec import TrainSpec, load_train_spec

__all__ = ["TrainSpec", "clipped_kl_loss_torch", "load_train_spec"]
