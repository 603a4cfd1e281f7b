"""One table of ratios from a ``make bench`` log: every bench's headline figures next to their same-run baselines.

    python scripts/bench_table.py LOG [--markdown]

Reads the lines ``bench.headline`` printed; a bench that ran but printed none
is listed as such, so a missing figure shows instead of vanishing.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

TAG = "BENCH-HEADLINE "
RAN = re.compile(r"^== bench/(\w+)\.py")


def _num(x: float) -> str:
    return f"{x:,.3g}" if abs(x) < 100 else f"{x:,.0f}"


def main() -> None:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("log", type=Path)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    ran: list[str] = []
    rows: list[dict[str, object]] = []
    for line in args.log.read_text(errors="replace").splitlines():
        if m := RAN.match(line):
            ran.append(m.group(1))
        elif line.startswith(TAG):
            rows.append(json.loads(line[len(TAG):]))
    seen = {str(r["bench"]) for r in rows}
    head = ("bench", "figure", "ours", "baseline (same run)", "ours/baseline")
    table = [head]
    for r in rows:
        unit = f" {r['unit']}" if r["unit"] else ""
        better = "higher" if r["higher_is_better"] else "lower"
        table.append((str(r["bench"]), str(r["figure"]), f"{_num(float(r['ours']))}{unit}",  # type: ignore[arg-type]
                      f"{r['baseline_name']}: {_num(float(r['baseline']))}{unit}",  # type: ignore[arg-type]
                      f"{float(r['ratio']):.2f}x ({better} is better)"))  # type: ignore[arg-type]
    table += [(b, "(no headline printed)", "", "", "") for b in ran if b not in seen]
    if args.markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for row in table[1:]:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


if __name__ == "__main__":
    main()
