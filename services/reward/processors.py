"""In-process reward processors: ``process(RewardInput) -> RewardOutput`` (``shared.schema.functions``).

User processors are loaded by classpath (allow-listed modules) with a weight, a
timeout and a concurrency limit. A processor that raises or hangs gives a
recorded failure for that trajectory; the batch always completes. Uploaded
reward function components speak the same contracts but run in the functions
service's workers.
"""

from __future__ import annotations

import asyncio
import inspect
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field

from services.reward.errors import RewardSpecError
from services.reward.service import ground_truth_of, is_rollout_error, score_trajectory
from services.reward.spec import RewardSpec
from shared.plugins import load_object
from shared.schema.functions import Reward, RewardInput, RewardOutput, TaskStatus

__all__ = ["ProcessorEntry", "RewardInput", "RewardOutput", "RewardProcessor", "SpecProcessor",
           "load_processor", "run_processors"]


class RewardProcessor(Protocol):
    """Anything with ``process(RewardInput) -> RewardOutput`` (sync or async)."""

    def process(self, inp: RewardInput) -> Any:
        """Score one input."""


class SpecProcessor:
    """The built-in processor: scores with a RewardSpec; rollout errors are skipped and masked."""

    def __init__(self, spec: RewardSpec | None = None) -> None:
        self.spec = spec or RewardSpec()

    def process(self, inp: RewardInput) -> RewardOutput:
        """Score one input with the spec (it needs the stored trajectory)."""
        if inp.trajectory is None:
            return RewardOutput(status=TaskStatus.FAILED, error="the spec processor scores stored trajectories")
        if is_rollout_error(inp.trajectory):
            return RewardOutput(status=TaskStatus.FAILED, error="rollout_error",
                                reward=Reward(reward_metrics={"rollout_error": 1.0}))
        truth = inp.truth()
        scored = score_trajectory(inp.trajectory, self.spec, truth if isinstance(truth, dict)
                                  else ground_truth_of(inp.trajectory))
        if scored.status != "ok" or scored.score is None:
            return RewardOutput(status=TaskStatus.FAILED, error=scored.error,
                                reward=Reward(reward_metrics=scored.metrics))
        return RewardOutput(reward=Reward(reward_score=scored.score, reward_metrics=scored.metrics))


class ProcessorEntry(BaseModel):
    """A processor with its weight, per-call timeout and concurrency limit."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    processor: Any
    name: str = "processor"
    weight: float = 1.0
    timeout_s: float = 30.0
    concurrency: int = Field(default=4, ge=1)


def load_processor(classpath: str, **kwargs: Any) -> RewardProcessor:
    """Instantiate ``package.module:Class`` (or ``package.module.Class``) with kwargs."""
    cls = load_object(classpath, what="reward processor", error=RewardSpecError, param="classpath")
    processor = cls(**kwargs)
    if not callable(getattr(processor, "process", None)):
        raise RewardSpecError(f"{classpath!r} has no process() method", param="classpath")
    return cast(RewardProcessor, processor)


async def _call(
    entry: ProcessorEntry, inp: RewardInput, pool: ThreadPoolExecutor, gate: asyncio.Semaphore
) -> RewardOutput:
    async with gate:
        try:
            if inspect.iscoroutinefunction(entry.processor.process):
                out = await asyncio.wait_for(entry.processor.process(inp), entry.timeout_s)
            else:
                loop = asyncio.get_running_loop()
                future = loop.run_in_executor(pool, entry.processor.process, inp)
                out = await asyncio.wait_for(future, entry.timeout_s)
            return out if isinstance(out, RewardOutput) else RewardOutput.model_validate(out)
        except TimeoutError:
            return RewardOutput(status=TaskStatus.FAILED, error=f"{entry.name}: timed out after {entry.timeout_s}s")
        except Exception as exc:  # noqa: BLE001 - user code: any failure is data for this trajectory
            return RewardOutput(status=TaskStatus.FAILED, error=f"{entry.name}: {type(exc).__name__}: {exc}")


def _combine(entries: list[ProcessorEntry], outs: list[RewardOutput]) -> RewardOutput:
    metrics: dict[str, float] = {}
    for entry, out in zip(entries, outs):
        metrics.update({f"{entry.name}/{k}": v for k, v in out.reward.reward_metrics.items()})
        if out.status is TaskStatus.SUCCESS:
            metrics[entry.name] = out.reward.reward_score
    failed = [o for e, o in zip(entries, outs) if o.status is TaskStatus.FAILED and e.weight != 0]
    if failed:
        return RewardOutput(status=TaskStatus.FAILED, reward=Reward(reward_metrics=metrics),
                            error="; ".join(o.error or "failed" for o in failed))
    score = sum(e.weight * o.reward.reward_score for e, o in zip(entries, outs) if e.weight != 0)
    return RewardOutput(reward=Reward(reward_score=score, reward_metrics=metrics))


async def run_processors(entries: list[ProcessorEntry], inputs: list[RewardInput]) -> list[RewardOutput]:
    """Run every processor on every input; per-input failures are recorded, never raised."""
    pools = [ThreadPoolExecutor(max_workers=e.concurrency) for e in entries]
    gates = [asyncio.Semaphore(e.concurrency) for e in entries]
    try:
        per_entry = [await asyncio.gather(*(_call(e, inp, pool, gate) for inp in inputs))
                     for e, pool, gate in zip(entries, pools, gates)]
    finally:
        for pool in pools:
            # Do not wait: a hung user thread must not hold the batch hostage.
            pool.shutdown(wait=False, cancel_futures=True)
    return [_combine(entries, [outs[i] for outs in per_entry]) for i in range(len(inputs))]
