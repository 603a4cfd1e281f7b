"""A score request end to end: spec components, then any user processors, merged per trajectory.

User processors are loaded by classpath only from the module prefixes the
server allows (``TRAJFORGE_REWARD_PROCESSOR_MODULES``): importing a module
runs its code, so an open list would let any caller run any installed code.
A processor that raises, hangs or returns a non-finite score fails only the
trajectory it was scoring.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from services.reward.errors import RewardSpecError
from services.reward.processors import (
    ProcessorEntry,
    RewardInput,
    RewardOutput,
    load_processor,
    run_processors,
)
from services.reward.schemas import ProcessorRef, ScoreRequest, ScoreResponse
from services.reward.service import ScoredTrajectory, score_trajectories
from shared.clients.functions import FunctionsClient
from shared.errors import TrajforgeError
from shared.plugins import check_allowed
from shared.schema import RewardRecord
from shared.schema.functions import RewardFunctionComponent, TaskStatus

__all__ = ["load_entries", "score_request"]


def load_entries(refs: Sequence[ProcessorRef], allowed_modules: Sequence[str]) -> list[ProcessorEntry]:
    """Instantiate the requested processors; 400 for a classpath outside the allowed modules or one that fails."""
    entries = []
    for ref in refs:
        check_allowed(ref.classpath, allowed_modules, what="reward processor", error=RewardSpecError,
                      setting="TRAJFORGE_REWARD_PROCESSOR_MODULES", param="processors")
        try:
            processor = load_processor(ref.classpath, **ref.kwargs)
        except RewardSpecError:
            raise
        except Exception as exc:
            raise RewardSpecError(f"reward processor {ref.classpath!r} failed to start: {type(exc).__name__}: {exc}",
                                  param="processors") from exc
        entries.append(ProcessorEntry(processor=processor, name=ref.name or ref.classpath, weight=ref.weight,
                                      timeout_s=ref.timeout_s, concurrency=ref.concurrency))
    return entries


def _record(entry: ProcessorEntry, out: RewardOutput) -> RewardRecord:
    base: dict[str, Any] = {"component": f"processor:{entry.name}", "version": "user", "weight": entry.weight,
            "params": {"classpath": type(entry.processor).__module__ + ":" + type(entry.processor).__qualname__}}
    if out.status is TaskStatus.FAILED:
        return RewardRecord(**base, status="failed", error=f"{entry.name}: {out.error or 'processor failed'}")
    return RewardRecord(**base, score=out.reward.reward_score, metrics=out.reward.reward_metrics)


def _merge(result: ScoredTrajectory, records: list[RewardRecord]) -> ScoredTrajectory:
    if result.status == "skipped":
        return result
    failed = [r for r in records if r.status == "failed" and r.weight != 0]
    merged = result.model_copy(update={"records": [*result.records, *records]})
    merged.metrics.update({r.component: r.score for r in records if r.score is not None})
    if failed or result.score is None:
        error = result.error or (failed[0].error if failed else None)
        return merged.model_copy(update={"score": None, "status": "failed", "error": error})
    extra = sum(r.weight * (r.score or 0.0) for r in records if r.weight != 0)
    return merged.model_copy(update={"score": result.score + extra})


async def score_request(body: ScoreRequest, *, allowed_modules: Sequence[str],
                        functions: FunctionsClient | None = None) -> ScoreResponse:
    """Score every trajectory of a request; failures are per-trajectory results, never a failed batch.

    ``functions`` reaches the functions service, needed when the spec lists reward function components.
    """
    if body.ground_truths is not None and len(body.ground_truths) != len(body.trajectories):
        raise RewardSpecError("ground_truths must have one entry per trajectory", param="ground_truths")
    entries = load_entries(body.processors, allowed_modules)
    results = await asyncio.to_thread(score_trajectories, body.trajectories, body.spec,
                                      ground_truths=body.ground_truths)
    if not entries and not body.spec.functions:
        return ScoreResponse(results=results)
    truths = body.ground_truths or [None] * len(body.trajectories)
    inputs = [RewardInput(trajectory=t, ground_truth=g) for t, g in zip(body.trajectories, truths)]
    # Each processor runs alone at weight 1 so its raw score is kept; weights apply once, in _merge.
    per_entry = [await run_processors([entry.model_copy(update={"weight": 1.0})], inputs) for entry in entries]
    records = [[_record(e, outs[i]) for e, outs in zip(entries, per_entry)] for i in range(len(results))]
    if body.spec.functions:
        if functions is None:
            raise RewardSpecError("this reward service cannot reach the functions service", param="spec.functions")
        wanted = [res.status != "skipped" for res in results]
        for i, extra in enumerate(await _function_records(functions, body.spec.functions, inputs, wanted)):
            records[i].extend(extra)
    return ScoreResponse(results=[_merge(res, recs) for res, recs in zip(results, records)])


async def _function_records(functions: FunctionsClient, components: Sequence[RewardFunctionComponent],
                            inputs: list[RewardInput], wanted: list[bool]) -> list[list[RewardRecord]]:
    """Every component on every wanted input, concurrently (the pools queue beyond their slots)."""

    async def one(component: RewardFunctionComponent, inp: RewardInput) -> RewardRecord:
        base: dict[str, Any] = {"component": f"function:{component.name}", "version": component.fcmodel.package_id,
                                "weight": component.weight, "params": {"classpath": component.fcmodel.classpath}}
        try:
            out = await functions.call_reward(component, inp)
        except TrajforgeError as exc:
            return RewardRecord(**base, status="failed", error=f"{component.name}: {exc.code}: {exc.message}")
        if out.status is TaskStatus.FAILED:
            return RewardRecord(**base, status="failed", error=f"{component.name}: {out.error or 'failed'}")
        return RewardRecord(**base, score=out.reward.reward_score, metrics=out.reward.reward_metrics)

    calls = [[one(c, inp) for c in components] if keep else [] for inp, keep in zip(inputs, wanted)]
    flat = await asyncio.gather(*(call for row in calls for call in row))
    out: list[list[RewardRecord]] = []
    at = 0
    for row in calls:
        out.append(list(flat[at:at + len(row)]))
        at += len(row)
    return out
