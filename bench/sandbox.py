"""Sandbox pool figures next to a plain unsandboxed subprocess, measured in one run.

    python bench/sandbox.py [--runs 100] [--concurrency 2]

Prints warm acquire/release latency, trivial python execution p50/p99 and
executions per second with every slot busy (concurrency = pool size), each
beside the same work done without isolation. The sandbox is the full profile:
bubblewrap, slot cgroup (joined per call), capped tmpfs remounted per lease,
seccomp filter, watchdog.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import headline  # noqa: E402
from shared.sandbox.limits import SandboxLimits  # noqa: E402
from shared.sandbox.pool import SandboxPool  # noqa: E402
from shared.sandbox.process import run_limited  # noqa: E402

PLAIN_ARGV = ["/usr/bin/python3", "-I", "-c", "pass"]


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _timed(fn: Callable[[], Awaitable[object]], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - start)
    return samples


async def _throughput(fn: Callable[[], Awaitable[object]], runs: int, concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            await fn()

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(runs)))
    return runs / (time.perf_counter() - start)


async def _acquire_samples(pool: SandboxPool, runs: int) -> tuple[list[float], list[float]]:
    acquire, release = [], []
    for _ in range(runs):
        start = time.perf_counter()
        slot = await pool.acquire()
        mid = time.perf_counter()
        await pool.release(slot)
        acquire.append(mid - start)
        release.append(time.perf_counter() - mid)
    return acquire, release


def _row(label: str, ours: float, base: float, unit: str = "ms") -> None:
    scale = 1000.0 if unit == "ms" else 1.0
    print(f"{label:<28}{ours * scale:>12.2f}{base * scale:>12.2f}{ours / base:>10.2f}x  {unit}")


async def main(runs: int, concurrency: int) -> None:
    """Measure and print the table."""
    limits = SandboxLimits()
    async with SandboxPool(concurrency, limits=limits) as pool:
        plain = lambda: run_limited(PLAIN_ARGV, limits=limits, timeout_s=30)  # noqa: E731
        sandboxed = lambda: pool.execute("pass", language="python")  # noqa: E731
        await sandboxed(), await plain()  # warm caches
        acquire, release = await _acquire_samples(pool, runs)
        ours, base = await _timed(sandboxed, runs), await _timed(plain, runs)
        ours_tp = await _throughput(sandboxed, runs, concurrency)
        base_tp = await _throughput(plain, runs, concurrency)
    print(f"runs={runs} pool_size=concurrency={concurrency}  columns: sandboxed | plain subprocess | ratio")
    print(
        f"{'warm acquire p50':<28}{statistics.median(acquire) * 1000:>12.3f} ms   (target < 2 ms)"
    )
    print(f"{'release+reset p50':<28}{statistics.median(release) * 1000:>12.3f} ms")
    _row("trivial python p50", statistics.median(ours), statistics.median(base))
    _row("trivial python p99", _pct(ours, 0.99), _pct(base, 0.99))
    _row("executions/s (full pool)", ours_tp, base_tp, unit="/s")
    print(
        f"isolation overhead (p50 ratio): {statistics.median(ours) / statistics.median(base):.2f}x"
    )
    headline("sandbox", "trivial python p50", statistics.median(ours) * 1000, statistics.median(base) * 1000,
             baseline_name="plain subprocess", unit="ms", higher_is_better=False)
    headline("sandbox", "trivial python p99", _pct(ours, 0.99) * 1000, _pct(base, 0.99) * 1000,
             baseline_name="plain subprocess", unit="ms", higher_is_better=False)
    headline("sandbox", "executions/s (full pool)", ours_tp, base_tp, baseline_name="plain subprocess",
             unit="executions/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.concurrency))
