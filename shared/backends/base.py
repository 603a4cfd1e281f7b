"""The ``InferenceBackend`` protocol: token ids in, token ids and logprobs out.

Every policy server the suite talks to (vLLM, SGLang, any OpenAI-compatible
endpoint, the in-process local engine) is driven through these six calls, so
rollouts and the gateway never depend on one server's quirks. A backend that
cannot do something (plain OpenAI has no token ids or pause) raises
``BackendUnsupported`` rather than pretending.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from shared.errors import BackendUnsupported
from shared.schema import SamplingParams

__all__ = [
    "BackendHealth",
    "BackendResult",
    "BackendSample",
    "BackendUnsupported",
    "InferenceBackend",
    "WeightSource",
    "WeightTransfer",
]


class BackendSample(BaseModel):
    """One sampled continuation; ``token_ids`` empty only where the server gives none (plain OpenAI)."""

    index: int = 0
    token_ids: list[int] = Field(default_factory=list)
    logprobs: list[float] | None = None
    text: str = ""
    finish_reason: str | None = None
    stop_reason: str | int | None = None


class BackendResult(BaseModel):
    """A generation: the prompt ids as the server saw them and every sample."""

    model: str
    prompt_ids: list[int]
    samples: list[BackendSample]
    weight_version: int | None = None


class BackendHealth(BaseModel):
    """Whether the server answers, and what it serves."""

    ok: bool
    model: str | None = None
    paused: bool | None = None
    detail: str = ""


class WeightTransfer(BaseModel):
    """One round of vLLM's weight-transfer protocol (the receiver's side; the trainer sends the tensors).

    ``init_info`` is the ``/init_weight_transfer_engine`` body's ``init_info`` (for NCCL:
    ``master_address``, ``master_port``, ``rank_offset``, ``world_size``), sent once per server;
    ``update_info`` is the ``/update_weights`` body's ``update_info`` (for NCCL: ``names``,
    ``dtype_names``, ``shapes``; for IPC: the handles). The trainer must broadcast the tensors
    while ``/update_weights`` is in flight.
    """

    update_info: dict[str, Any]
    init_info: dict[str, Any] | None = None
    is_checkpoint_format: bool = True


#: What ``update_weights`` takes: an HF model directory on the server's disk, or a transfer round.
WeightSource = str | WeightTransfer


@runtime_checkable
class InferenceBackend(Protocol):
    """What the suite needs from a policy server."""

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> BackendResult:
        """Sample continuations of ``prompt_ids``."""
        ...

    async def get_logprobs(self, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
        """Logprob of each completion token under the current weights (for re-scoring)."""
        ...

    async def update_weights(self, source: WeightSource) -> None:
        """Load new weights: from an HF model directory path, or one ``WeightTransfer`` round."""
        ...

    async def pause(self) -> None:
        """Stop taking new generations (before a weight update)."""
        ...

    async def resume(self) -> None:
        """Take generations again."""
        ...

    async def health(self) -> BackendHealth:
        """Probe the server."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
