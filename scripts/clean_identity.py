"""Prove that the cleaning pipeline's output is unchanged against a git revision.

Runs the default per-batch pipeline (``build_steps(None)``, as the CLI and jobs build it) and
each default step on its own, in the tree at ``--rev`` and in the working tree, over every row
of the shared data folder and of the labelled set, and compares every output row (kept rows
with their normalised messages, dropped rows with reason, step and evidence, in order) and the
per-step stats (seconds left out). Exit status 1 and the first differences when anything differs.

    python scripts/clean_identity.py [--rev cf1c748] [--batch-size 500]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

import orjson

REPO_ROOT = Path(__file__).resolve().parents[1]
LABELLED = REPO_ROOT / "tests" / "services" / "cleaning" / "data" / "labelled_rows.jsonl"


def _inputs() -> list[Path]:
    sys.path.insert(0, str(REPO_ROOT))
    from shared.data import data_dir

    return [*sorted(data_dir().glob("*.jsonl")), LABELLED]


def _rows(paths: list[Path]) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        lines = [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]
        rows += [{**orjson.loads(ln), "_identity_key": f"{path.stem}:{i}"} for i, ln in enumerate(lines)]
    return rows


def _digest(row: Any) -> str:
    return hashlib.sha256(orjson.dumps(row, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def _child(paths: list[Path], batch_size: int) -> None:
    """Print one JSON object: per mode, the digest of every output row and the stats."""
    from services.cleaning.pipeline import DEFAULT_PIPELINE_NAMES
    from services.cleaning.preprocessor import QualityPreprocessor
    from services.cleaning.registry import build_step
    from services.cleaning.runner import build_steps

    modes: dict[str, list[list[Any]]] = {
        "default": [build_steps(None)],
        "one_step_at_a_time": [[build_step({"name": n, "params": {}})] for n in DEFAULT_PIPELINE_NAMES],
    }
    rows = _rows(paths)
    out: dict[str, Any] = {}
    for mode, stages in modes.items():
        lines: list[str] = []
        stats: list[Any] = []
        for i in range(0, len(rows), batch_size):
            batch: list[dict[str, Any]] = [dict(r) for r in rows[i:i + batch_size]]
            done: list[dict[str, Any]] = []
            for steps in stages:
                res = QualityPreprocessor(steps)(batch)
                batch = res.kept
                done += res.dropped + res.invalid
                stats += [s.model_dump(exclude={"seconds"}) for s in res.stats]
            lines += [f"{r['_identity_key']} {r.get('drop_reason') or 'keep'} {_digest(r)}" for r in batch + done]
        out[mode] = {"rows": lines, "stats": stats}
    print(orjson.dumps(out).decode())


def _run(pythonpath: Path, paths: list[Path], batch_size: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    args = [sys.executable, __file__, "--child", "--batch-size", str(batch_size), *map(str, paths)]
    proc = subprocess.run(args, env=env, capture_output=True, check=True, cwd=pythonpath)
    result: dict[str, Any] = orjson.loads(proc.stdout.splitlines()[-1])
    return result


def _tree_at(rev: str, dest: Path) -> None:
    data = subprocess.run(["git", "-C", str(REPO_ROOT), "archive", rev, "services", "shared"],
                          capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")


def main() -> int:
    """Compare the working tree with ``--rev``; 0 when every output is identical."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rev", default="cf1c748")
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("paths", nargs="*")
    args = ap.parse_args()
    if args.child:
        _child([Path(p) for p in args.paths], args.batch_size)
        return 0
    paths = _inputs()
    with tempfile.TemporaryDirectory() as tmp:
        _tree_at(args.rev, Path(tmp))
        before = _run(Path(tmp), paths, args.batch_size)
    after = _run(REPO_ROOT, paths, args.batch_size)
    failed = False
    for mode in before:
        a, b = before[mode], after[mode]
        diff = [(x, y) for x, y in zip(a["rows"], b["rows"]) if x != y]
        same_stats = a["stats"] == b["stats"]
        ok = not diff and len(a["rows"]) == len(b["rows"]) and same_stats
        failed |= not ok
        print(f"{mode}: {len(b['rows']):,} rows, {'identical' if ok else 'DIFFERENT'} to {args.rev}"
              f" ({len(diff)} rows differ, stats {'same' if same_stats else 'differ'})")
        for x, y in diff[:10]:
            print(f"  {args.rev}: {x}\n  now:     {y}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
