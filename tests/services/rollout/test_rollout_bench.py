"""bench/rollout.py's virtual-clock runs: the real engine against the bench's simulated upstream in
process, on an event loop whose clock jumps to the next timer (so these checks take no wall time)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from bench.rollout import Direct, Model, VirtualClockLoop, _Upstream, run_barrier, run_engine

MODEL = Model(seed=3, policy_median_s=0.06, policy_sigma=0.6, tool_scale_s=0.02, tool_alpha=1.5, tool_cap_s=2.0)


T = TypeVar("T")


def _on_virtual_clock(coro_fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
    loop = VirtualClockLoop()
    try:
        return loop.run_until_complete(coro_fn())
    finally:
        loop.close()


def test_the_virtual_clock_jumps_to_the_next_timer() -> None:
    async def sleep_long() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.gather(asyncio.sleep(50.0), asyncio.sleep(100.0))
        return loop.time() - start

    wall = time.perf_counter()
    assert _on_virtual_clock(sleep_long) == 100.0
    assert time.perf_counter() - wall < 5.0  # a hundred virtual seconds, not real ones


def test_each_schedule_lands_between_the_lower_bound_and_the_barrier() -> None:
    prompts, group, capacity = 8, 4, 8
    chain, cap_bound, _ = MODEL.bounds(prompts, group, capacity)

    async def measure() -> dict[str, float]:
        client = Direct(_Upstream(MODEL, capacity))
        out: dict[str, float] = {}
        for schedule in ("fifo", "turns", "estimate"):
            await client.post("/reset", {"capacity": capacity})
            run = await run_engine(client, prompts, group, capacity, schedule)  # type: ignore[arg-type]
            assert not run.bad_groups and run.errors == 0
            out[schedule] = run.wall
        await client.post("/reset", {"capacity": capacity})
        spare = await run_engine(client, prompts, group, capacity, "estimate", relaunch=0.25)
        assert not spare.bad_groups and spare.stats["spares"] >= 1
        await client.post("/reset", {"capacity": capacity})
        out["barrier"] = await run_barrier(client, prompts, group)
        return out

    got = _on_virtual_clock(measure)
    lower = max(chain, cap_bound)
    for schedule in ("fifo", "turns", "estimate"):  # without spares nothing beats the bound
        assert lower * 0.999 <= got[schedule] < got["barrier"]
