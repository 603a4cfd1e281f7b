"""Benchmarks: scripts that print measured figures next to a baseline.

Each bench also calls ``headline`` for its headline figures: one
machine-readable line per figure, with the baseline measured in the same run,
which ``make bench`` gathers into one table of ratios (``scripts/bench_table.py``).
"""

from __future__ import annotations

import json
import socket
import time

__all__ = ["HEADLINE_TAG", "free_port", "headline", "wait_up"]

HEADLINE_TAG = "BENCH-HEADLINE "


def headline(bench: str, figure: str, ours: float, baseline: float, *, baseline_name: str, unit: str = "",
             higher_is_better: bool = True) -> None:
    """Print one headline figure next to its same-run baseline (and their ratio) as a tagged JSON line."""
    ratio = ours / baseline if baseline else float("nan")
    print(HEADLINE_TAG + json.dumps({"bench": bench, "figure": figure, "ours": ours, "baseline": baseline,
                                     "baseline_name": baseline_name, "unit": unit, "ratio": ratio,
                                     "higher_is_better": higher_is_better}), flush=True)


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str, within_s: float = 120) -> None:
    """Poll ``url`` until it answers 200; raise if it never does within ``within_s``."""
    import httpx

    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{url} never answered")
