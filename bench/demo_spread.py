"""Demo reward-spread benchmark: ``trajforge demo --seed N`` over several seeds, the spread of each.

A group whose members all earn the same reward has zero advantage everywhere (no learning signal);
the demo's reward and sampling aim for non-zero variance in at least half the groups on every seed.
Each seed runs the real demo (embedded defaults, the local model) in a subprocess; the figure is the
summary's "reward spread: X of Y groups". Too slow for the test suite on a shared 2-core machine.

Run: PYTHONPATH=. python bench/demo_spread.py [--seeds 1 2 3 4 5] [demo options...]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPREAD = re.compile(r"reward spread: (\d+) of (\d+) groups")


def run_seed(seed: int, extra: list[str]) -> tuple[int, int, float]:
    """(groups with spread, groups, wall seconds) of one demo run."""
    with tempfile.TemporaryDirectory(prefix="trajforge-bench-demo-") as tmp:
        env = {k: v for k, v in os.environ.items() if k not in ("TRAJFORGE_DATABASE_URL", "TRAJFORGE_REDIS_URL")}
        env |= {"TRAJFORGE_HOME": tmp, "TRAJFORGE_TOOLS_SANDBOX": "optional", "PYTHONPATH": str(ROOT),
                "COLUMNS": "200"}
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "services.cli", "demo", "--seed", str(seed), "--out",
                              str(Path(tmp) / "out"), *extra], cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
    found = SPREAD.search(out.stdout)
    if out.returncode != 0 or found is None:
        raise SystemExit(f"seed {seed}: demo failed (rc {out.returncode}):\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return int(found.group(1)), int(found.group(2)), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    args, extra = parser.parse_known_args()
    met = 0
    for seed in args.seeds:
        varied, groups, wall = run_seed(seed, extra)
        ok = groups > 0 and 2 * varied >= groups
        met += ok
        print(f"seed {seed}: {varied} of {groups} groups with reward spread ({'≥' if ok else '<'} half), "
              f"{wall:.0f} s, load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"{met} of {len(args.seeds)} seeds reach spread in at least half the groups")


if __name__ == "__main__":
    main()
