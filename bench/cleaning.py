"""Throughput of the default cleaning pipeline (and of its fused single pass) vs plain JSONL read+write, per core.

Times are CPU seconds of this process (time.process_time), so load from other processes
on a shared machine skews them less than wall time. Runs single-process over every row
of the shared data folder (beside the repository, or TRAJFORGE_SHARED_DATA_DIR) and
prints rows/s of each pass and the ratios; then the default pipeline's scores on the
labelled set (per language and class).
Usage: python bench/cleaning.py [--repeat N]
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

import orjson

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench import headline  # noqa: E402
from services.cleaning.evaluate import score_labelled  # noqa: E402
from services.cleaning.fused import fuse  # noqa: E402
from services.cleaning.pipeline import default_pipeline  # noqa: E402
from services.cleaning.preprocessor import QualityPreprocessor, gc_paused  # noqa: E402
from services.cleaning.runner import build_steps  # noqa: E402
from shared.data import data_dir  # noqa: E402
from shared.jsonl import dumps_line  # noqa: E402

LABELLED = REPO_ROOT / "tests" / "services" / "cleaning" / "data" / "labelled_rows.jsonl"


def load_lines() -> list[bytes]:
    """Every non-empty line of every JSONL file."""
    lines: list[bytes] = []
    for path in sorted(data_dir().glob("*.jsonl")):
        lines += [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]
    return lines


def raw_pass(lines: list[bytes]) -> float:
    """Seconds to parse every line and write it back (orjson)."""
    out = io.BytesIO()
    start = time.process_time()
    for ln in lines:
        out.write(orjson.dumps(orjson.loads(ln), option=orjson.OPT_APPEND_NEWLINE))
    return time.process_time() - start


def pipeline_pass(lines: list[bytes], batch_size: int, fused: bool = False) -> tuple[float, int]:
    """CPU seconds to parse, clean (default pipeline, no PII, no dedup) and write kept + dropped, in batches.

    ``fused=False`` is the pipeline as jobs and the CLI build it (``build_steps(None)``).
    """
    out = io.BytesIO()
    pre = QualityPreprocessor(fuse(default_pipeline()) if fused else build_steps(None))
    kept = 0
    start = time.process_time()
    for i in range(0, len(lines), batch_size):
        with gc_paused():  # as a cleaning job does per batch: load, clean, write
            res = pre([orjson.loads(ln) for ln in lines[i:i + batch_size]])
            kept += len(res.kept)
            for row in res.kept + res.dropped + res.invalid:
                out.write(dumps_line(row))
    return time.process_time() - start, kept


def main() -> None:
    """Measure both passes side by side and print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=500, help="rows per batch, as a cleaning job shards them")
    args = parser.parse_args()
    lines = load_lines()
    pipeline_pass(lines[:200], args.batch_size)  # warm caches
    # Interleave the two passes so load from other processes hits both alike.
    raws, runs, fuseds = [], [], []
    for _ in range(args.repeat):
        raws.append(raw_pass(lines))
        runs.append(pipeline_pass(lines, args.batch_size))
        fuseds.append(pipeline_pass(lines, args.batch_size, fused=True))
    raw = min(raws)
    pipe, kept = min(runs)
    fused, _ = min(fuseds)
    n, mb = len(lines), sum(map(len, lines)) / 1e6
    files = len(list(data_dir().glob("*.jsonl")))
    print(f"rows: {n:,} ({mb:.1f} MB, {files} files), kept {kept:,}; "
          f"batches of {args.batch_size}; best of {args.repeat}")
    print(f"{'pass':<34}{'seconds':>9}{'rows/s/core':>14}{'MB/s':>8}")
    print(f"{'raw read+write (orjson)':<34}{raw:>9.3f}{n / raw:>14,.0f}{mb / raw:>8.1f}")
    print(f"{'default pipeline':<34}{pipe:>9.3f}{n / pipe:>14,.0f}{mb / pipe:>8.1f}")
    print(f"{'fused single pass':<34}{fused:>9.3f}{n / fused:>14,.0f}{mb / fused:>8.1f}")
    print(f"ratio default pipeline/raw: {raw / pipe:.1%}, fused/raw: {raw / fused:.1%}  "
          "(target >= 25% and >= 3,000 rows/s/core; CPU seconds of this process, best of the runs)")
    headline("cleaning", "default pipeline", n / pipe, n / raw, baseline_name="orjson read+write",
             unit="rows/s/core")
    labelled = [orjson.loads(x) for x in LABELLED.read_bytes().splitlines() if x.strip()]
    scores = score_labelled(labelled, default_pipeline())
    print(f"\nlabelled set ({LABELLED.relative_to(REPO_ROOT)}): targets accuracy >= 0.92, drop precision >= 0.90, "
          "drop recall >= 0.90, each language >= 0.88")
    print(scores.table())


if __name__ == "__main__":
    main()
