"""Rollout methods of the train registry: how rollouts interleave with training steps.

A rollout method drives the loop; the caller gives it three callables:

- ``rollout(batch, weight_version) -> trajectories``: sample one batch with the
  weights now live on the policy server (any seed-style rollout's ``run`` fits).
- ``train(trajectories, step)``: one training step on those trajectories.
- ``sync_weights(step)``: publish the weights made by step ``step`` (version
  ``step + 1``) to the policy server (``InferenceBackend.update_weights`` or a
  weight-transfer push).

``hybrid``: rollout and training share devices, in turn: sample with version
``k``, train step ``k``, sync; staleness is always 0.

``one_step_off``: rollouts run one weight version behind: while step ``k``
trains on batch ``k``, batch ``k + 1`` is sampled with the weights of version
``k``; weights sync once both finish. Trajectories trained at step ``k`` were
sampled with version ``k - 1`` (staleness 1; the first batch 0).

Each trajectory records ``weight_version`` (the server's own report when it
gives one, else the version live when its rollout began), ``train_step`` and
``staleness``; a trajectory staler than ``max_staleness_steps`` is dropped from
its step (``metadata["dropped"] = "stale"``) and counted in the report. With a
``logprob_backend``, each kept trajectory's response tokens are re-scored under
the weights live at training time (``InferenceBackend.get_logprobs``) into
``metadata["recomputed_logprobs"]``, the off-policy correction's denominator.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from shared.backends.base import InferenceBackend
from shared.errors import InvalidInput
from shared.schema import Trajectory

__all__ = ["TrainReport", "TrainStepReport", "hybrid_rollout", "one_step_off_rollout", "recompute_logprobs"]

Batch = Sequence[Trajectory | dict[str, Any]]
RolloutFn = Callable[[Batch, int], Awaitable[list[Trajectory]]]
TrainFn = Callable[[list[Trajectory], int], Any]
SyncFn = Callable[[int], Any]


class TrainStepReport(BaseModel):
    """One training step: what it trained on and what it dropped."""

    step: int
    trained: int
    dropped_stale: int
    weight_versions: list[int] = Field(default_factory=list)
    staleness: list[int] = Field(default_factory=list)
    metrics: Any = None


class TrainReport(BaseModel):
    """Every step of one run of a rollout method."""

    cluster_mode: str
    max_staleness_steps: int
    steps: list[TrainStepReport] = Field(default_factory=list)


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _reported_version(traj: Trajectory, started_with: int) -> int:
    reported = traj.tokens.weight_version if traj.tokens is not None else None
    try:
        return int(reported) if reported is not None else started_with
    except ValueError:  # a server naming versions by checkpoint, not by number
        return started_with


async def recompute_logprobs(trajectories: Sequence[Trajectory], backend: InferenceBackend) -> None:
    """Re-score each trajectory's response tokens under the backend's current weights."""
    for traj in trajectories:
        if traj.tokens is None or not traj.tokens.response_ids:
            continue
        scores = await backend.get_logprobs(list(traj.tokens.prompt_ids), list(traj.tokens.response_ids))
        if len(scores) != len(traj.tokens.response_ids):
            raise InvalidInput(f"get_logprobs returned {len(scores)} scores for "
                               f"{len(traj.tokens.response_ids)} tokens", param="logprob_backend")
        traj.metadata["recomputed_logprobs"] = [
            s if m else None for s, m in zip(scores, traj.tokens.loss_mask or [1] * len(scores), strict=True)]


class _Loop:
    """State shared by both methods: stamping, the staleness rule, the report."""

    def __init__(self, mode: str, train: TrainFn, sync: SyncFn | None, max_staleness_steps: int,
                 logprob_backend: InferenceBackend | None) -> None:
        if max_staleness_steps < 0:
            raise InvalidInput("max_staleness_steps must be >= 0", param="max_staleness_steps")
        self.train, self.sync, self.backend = train, sync, logprob_backend
        self.report = TrainReport(cluster_mode=mode, max_staleness_steps=max_staleness_steps)

    def stamp(self, trajectories: list[Trajectory], started_with: int, step: int) -> list[Trajectory]:
        kept: list[Trajectory] = []
        for traj in trajectories:
            version = _reported_version(traj, started_with)
            traj.metadata.update(weight_version=version, train_step=step, staleness=step - version)
            if step - version > self.report.max_staleness_steps:
                traj.metadata["dropped"] = "stale"
            else:
                kept.append(traj)
        return kept

    async def train_step(self, trajectories: list[Trajectory], started_with: int, step: int) -> None:
        kept = self.stamp(trajectories, started_with, step)
        if self.backend is not None:
            await recompute_logprobs(kept, self.backend)
        metrics = await _maybe(self.train(kept, step))
        self.report.steps.append(TrainStepReport(
            step=step, trained=len(kept), dropped_stale=len(trajectories) - len(kept), metrics=metrics,
            weight_versions=[int(t.metadata["weight_version"]) for t in trajectories],
            staleness=[int(t.metadata["staleness"]) for t in trajectories]))

    async def publish(self, step: int) -> None:
        if self.sync is not None:
            await _maybe(self.sync(step))


async def hybrid_rollout(batches: Sequence[Batch], *, rollout: RolloutFn, train: TrainFn,
                         sync_weights: SyncFn | None = None, max_staleness_steps: int = 0,
                         logprob_backend: InferenceBackend | None = None, first_version: int = 0) -> TrainReport:
    """Sample, train, sync, in turn: every step trains on its own weights' samples."""
    loop = _Loop("hybrid", train, sync_weights, max_staleness_steps, logprob_backend)
    for step, batch in enumerate(batches):
        version = first_version + step
        trajectories = await rollout(batch, version)
        await loop.train_step(trajectories, version, first_version + step)
        await loop.publish(step)
    return loop.report


async def one_step_off_rollout(batches: Sequence[Batch], *, rollout: RolloutFn, train: TrainFn,
                               sync_weights: SyncFn | None = None, max_staleness_steps: int = 1,
                               logprob_backend: InferenceBackend | None = None, first_version: int = 0
                               ) -> TrainReport:
    """Train step ``k`` while batch ``k + 1`` samples with version ``k``; sync when both finish."""
    loop = _Loop("one_step_off", train, sync_weights, max_staleness_steps, logprob_backend)
    if not batches:
        return loop.report
    ready, ready_version = await rollout(batches[0], first_version), first_version
    for step in range(len(batches)):
        version = first_version + step  # live on the server while this step trains
        training = loop.train_step(ready, ready_version, first_version + step)
        if step + 1 < len(batches):
            _, sampled = await asyncio.gather(training, rollout(batches[step + 1], version))
            ready, ready_version = sampled, version
        else:
            await training
        await loop.publish(step)
    return loop.report
