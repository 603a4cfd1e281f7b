"""Export benchmark: batched Parquet writing (row groups streamed to disk) vs one table built in memory.

Each variant runs in its own fresh process so its peak RSS is its own. Rows
are synthetic trajectories of realistic shape (a 2,000-token prompt, a
1,000-token response over three turns with tool tokens masked out).

Run: PYTHONPATH=. python bench/export.py [ROWS]
"""

from __future__ import annotations

import multiprocessing as mp
import random
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bench import headline
from services.rollout.export import PARQUET_SCHEMA, ExportItem, parquet_row, write_parquet
from shared.schema import Trajectory

PROMPT_TOKENS, RESPONSE_TOKENS = 2000, 1000


def _items(rows: int) -> Iterator[ExportItem]:
    rng = random.Random(0)
    prompt = [rng.randrange(50_000) for _ in range(PROMPT_TOKENS)]
    mask = ([1] * 300 + [0] * 50) * 2 + [1] * 300  # three sampled turns, two tool observations
    for i in range(rows):
        response = [rng.randrange(50_000) for _ in range(RESPONSE_TOKENS)]
        logprobs = [-rng.random() if m else None for m in mask]
        traj = Trajectory.model_validate({
            "id": f"t{i}", "group_id": f"g{i // 8}", "sample_index": i % 8, "turns": 3, "stop_reason": "stop",
            "messages": [{"role": "user", "content": "q" * 200}, {"role": "assistant", "content": "a" * 400}],
            "tokens": {"prompt_ids": prompt, "response_ids": response, "loss_mask": mask, "logprobs": logprobs}})
        yield ExportItem(traj, task_id=f"task{i // 8}", reward=rng.random(), advantage=rng.gauss(0, 1))


def _batched(rows: int, path: str) -> None:
    write_parquet(_items(rows), path, batch_rows=128)


def _in_memory(rows: int, path: str) -> None:
    pq.write_table(pa.Table.from_pylist([parquet_row(i) for i in _items(rows)], schema=PARQUET_SCHEMA), path,
                   compression="zstd")


def _child(variant: str, rows: int, path: str, out: mp.Queue) -> None:  # type: ignore[type-arg]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    (_batched if variant == "batched" else _in_memory)(rows, path)
    seconds = time.perf_counter() - start
    out.put((seconds, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024))


def _run(variant: str, rows: int, folder: Path) -> tuple[float, float, float]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    path = str(folder / f"{variant}.parquet")
    proc = ctx.Process(target=_child, args=(variant, rows, path, queue))
    proc.start()
    seconds, peak_mib = queue.get()
    proc.join()
    return seconds, peak_mib, Path(path).stat().st_size / 2**20


def main() -> None:
    """Write the same rows both ways and print time, peak memory growth and file size side by side."""
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    with tempfile.TemporaryDirectory() as tmp:
        batched = _run("batched", rows, Path(tmp))
        whole = _run("in_memory", rows, Path(tmp))
    print(f"Parquet export of {rows:,} trajectories ({PROMPT_TOKENS} prompt + {RESPONSE_TOKENS} response tokens)")
    print(f"  batched (ours)   : {batched[0]:6.2f} s  {rows / batched[0]:8,.0f} rows/s  peak +{batched[1]:7.0f} MiB"
          f"  file {batched[2]:.1f} MiB")
    print(f"  one table (base) : {whole[0]:6.2f} s  {rows / whole[0]:8,.0f} rows/s  peak +{whole[1]:7.0f} MiB"
          f"  file {whole[2]:.1f} MiB")
    print(f"  ratio            : time {batched[0] / whole[0]:.2f}x   peak memory {batched[1] / max(whole[1], 1):.2f}x")
    headline("export", f"Parquet export of {rows:,}, peak memory", batched[1], max(whole[1], 1),
             baseline_name="one in-memory table", unit="MiB", higher_is_better=False)
    headline("export", f"Parquet export of {rows:,}, time", batched[0], whole[0],
             baseline_name="one in-memory table", unit="s", higher_is_better=False)


if __name__ == "__main__":
    main()
