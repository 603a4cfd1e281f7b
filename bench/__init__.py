"""Benchmarks: scripts that print measured figures next to a baseline.

Each bench also calls ``headline`` for its headline figures: one
machine-readable line per figure, with the baseline measured in the same run,
which ``make bench`` gathers into one table of ratios (``scripts/bench_table.py``).
"""

from __future__ import annotations

import json

__all__ = ["HEADLINE_TAG", "headline"]

HEADLINE_TAG = "BENCH-HEADLINE "


def headline(bench: str, figure: str, ours: float, baseline: float, *, baseline_name: str, unit: str = "",
             higher_is_better: bool = True) -> None:
    """Print one headline figure next to its same-run baseline (and their ratio) as a tagged JSON line."""
    ratio = ours / baseline if baseline else float("nan")
    print(HEADLINE_TAG + json.dumps({"bench": bench, "figure": figure, "ours": ours, "baseline": baseline,
                                     "baseline_name": baseline_name, "unit": unit, "ratio": ratio,
                                     "higher_is_better": higher_is_better}), flush=True)
