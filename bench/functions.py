"""Function components: cold start, warm per-call overhead vs an in-process processor, autoscale reaction.

All in one run, on the sample workspace (tests/services/functions/workspace), through the
functions service's domain layer (package store, pool, worker subprocess with its cgroup):

1. cold start: a new component version's first call (deps cached, so: spawn, cgroup,
   import of the processor, setup, one call), several times with distinct versions;
2. warm per call: sequential echo calls on a running instance vs the same processor class
   called in this process through ``ProcessorRuntime`` (the in-process baseline);
3. autoscale reaction: a burst on a one-instance pool (concurrency 1, threshold 0.5, max 4);
   the time from the threshold being crossed to the new instance serving, as the pool records
   it, and from the burst's start to the first call answered by a new instance.

Wall-clock figures on a shared machine: compare the ratios printed side by side.
Usage: python bench/functions.py [--calls N] [--cold N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench import headline  # noqa: E402
from services.functions.service import FunctionsService  # noqa: E402
from services.rollout.processors import ProcessorRuntime, ProcessorSpec  # noqa: E402
from shared.clients.functions import zip_workspace  # noqa: E402
from shared.schema.functions import (  # noqa: E402
    FunctionComponentModel,
    FunctionComponentRuntime,
    RolloutFunctionComponent,
    RolloutInput,
)
from shared.settings import Settings  # noqa: E402

WORKSPACE = REPO_ROOT / "tests" / "services" / "functions" / "workspace"
CLASSPATH = "functions.misbehave.Misbehaving"


def _component(package_id: str, **runtime: object) -> RolloutFunctionComponent:
    return RolloutFunctionComponent(name="bench", timeout=120, fcmodel=FunctionComponentModel(
        package_id=package_id, classpath=CLASSPATH), runtime=FunctionComponentRuntime.model_validate(runtime))


def _input(**extra: object) -> RolloutInput:
    return RolloutInput(messages=[{"role": "user", "content": "hi"}], rollout_extra=dict(extra))


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1e3:8.2f} ms  mean {statistics.fmean(values) * 1e3:8.2f} ms"


async def cold_starts(service: FunctionsService, package_id: str, n: int) -> list[float]:
    """Seconds from a new component version's first call to its answer."""
    out = []
    for i in range(n):
        comp = _component(package_id, env={"BENCH_VERSION": str(i)})  # a distinct version: a new pool
        started = time.perf_counter()
        result = await service.call_rollout(package_id, comp, _input())
        out.append(time.perf_counter() - started)
        assert not result.failed, result
    return out


async def warm_calls(service: FunctionsService, package_id: str, n: int) -> list[float]:
    """Seconds per sequential call on a warm instance."""
    comp = _component(package_id)
    await service.call_rollout(package_id, comp, _input())
    out = []
    for _ in range(n):
        started = time.perf_counter()
        await service.call_rollout(package_id, comp, _input())
        out.append(time.perf_counter() - started)
    return out


async def in_process_calls(n: int) -> list[float]:
    """Seconds per call of the same class in this process (the baseline)."""
    sys.path.insert(0, str(WORKSPACE))
    runtime = ProcessorRuntime(ProcessorSpec(classpath=CLASSPATH))
    await runtime.process(_input())
    out = []
    for _ in range(n):
        started = time.perf_counter()
        await runtime.process(_input())
        out.append(time.perf_counter() - started)
    return out


async def burst(service: FunctionsService, package_id: str) -> tuple[list[float], float]:
    """Reaction times the pool recorded, and burst start → first answer from a new instance."""
    comp = _component(package_id, concurrency=1, capacity=1, min_capacity=1, max_capacity=4,
                      concurrency_scale_threshold=0.5, env={"BENCH": "burst"})
    first = await service.call_rollout(package_id, comp, _input())
    first_pid = first.agent_output.rollout_extra["pid"]  # type: ignore[index]
    started = time.perf_counter()
    new_served: list[float] = []

    async def one() -> None:
        out = await service.call_rollout(package_id, comp, _input(do="sleep", seconds=1.0))
        if out.agent_output.rollout_extra and out.agent_output.rollout_extra["pid"] != first_pid:
            new_served.append(time.perf_counter() - started)

    await asyncio.gather(*(one() for _ in range(8)))
    pool = next(p for p in service.pools.values() if p.runtime.env.get("BENCH") == "burst")
    reactions = [e.reaction_s for e in pool.events if e.direction == "up" and e.reaction_s is not None]
    # A new instance's first answer includes one 1 s call: subtract it for "serving".
    return reactions, (min(new_served) - 1.0) if new_served else float("nan")


async def main() -> None:
    """Run every measurement once and print them side by side."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--cold", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        settings = Settings(home=Path(home), functions_scale_interval_s=0.1, functions_scale_down_after_s=60)
        service = FunctionsService(settings)
        try:
            package = await service.store.upload(zip_workspace(WORKSPACE))
            package = await service.store.wait(package.package_id)
            assert package.status == "ready", package
            pid = package.package_id
            cgroups = "per-instance cgroups" if service._cgroups is not None else "no cgroups (rlimits only)"
            print(f"function components bench ({cgroups}; sample workspace, empty requirements)")
            cold = await cold_starts(service, pid, args.cold)
            warm = await warm_calls(service, pid, args.calls)
            local = await in_process_calls(args.calls)
            reactions, new_serving = await burst(service, pid)
        finally:
            await service.close()
    print(f"cold start (deps cached), {len(cold)} versions: {_ms(cold)}")
    print(f"warm call, worker process ({len(warm)} calls):   {_ms(warm)}")
    print(f"in-process call, same class ({len(local)} calls): {_ms(local)}")
    overhead = statistics.median(warm) - statistics.median(local)
    print(f"per-call overhead of isolation: {overhead * 1e3:.2f} ms median "
          f"({statistics.median(warm) / statistics.median(local):.0f}x the in-process call); "
          f"cold start = {statistics.median(cold) / statistics.median(warm):.0f}x a warm call")
    headline("functions", "warm call, worker process (median)", statistics.median(warm) * 1e3,
             statistics.median(local) * 1e3, baseline_name="in-process call, same class", unit="ms",
             higher_is_better=False)
    if reactions:
        print(f"autoscale: {len(reactions)} instances added; threshold -> instance ready: {_ms(reactions)}")
    print(f"autoscale: burst start -> first call served by a new instance: {new_serving * 1e3:.0f} ms")


if __name__ == "__main__":
    asyncio.run(main())
