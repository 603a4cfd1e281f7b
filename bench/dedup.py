"""Global dedup of 1,000,000 rows, in memory and two-pass streaming (SQLite), vs the reference way.

Rows are real rows from the shared data folder replicated with variations:
new ids, whitespace and case changes in the first user turn (duplicates after
normalisation), small edits (new signatures) and appended turns (longer rows
that must win). Each mode runs in its own process so peak RSS is its own.

    python bench/dedup.py [--rows 1000000] [--baseline-rows 100000] [--near-rows 1000000] [--only-near]

The near-dedup part streams ``--near-rows`` rows through NearDedupFilter (signatures in
a SQLite file) and, at ``--baseline-rows``, compares with all signatures held in memory.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from datasketch import MinHashLSH  # noqa: E402

from bench import headline  # noqa: E402
from services.cleaning.dedup import DedupFilter, stream_dedup  # noqa: E402
from services.cleaning.near_dedup import NearDedupFilter, conversation_text  # noqa: E402
from services.cleaning.signature_store import SqliteSignatureStore  # noqa: E402
from shared.data import load_all_rows  # noqa: E402

_EXTRA_TURN = {"role": "user", "content": "Thanks, one more question."}
# Characters of each conversation that near-dedup shingles here: MinHash time grows with it,
# signature size (what memory would hold) does not.
NEAR_MAX_CHARS = 400


def _vary_user(messages: list[Any], how: int, i: int) -> list[Any]:
    out = list(messages)
    for j, m in enumerate(out):
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str):
            text = m["content"]
            text = {
                1: "  " + text.replace(" ", "   ", 3) + "\n",
                2: text.upper(),
                3: f"{text} (v{i})",
            }[how]
            out[j] = {**m, "content": text}
            break
    return out


def variants(base: list[dict[str, Any]], n: int) -> Iterator[dict[str, Any]]:
    """``n`` rows: base rows cycled, each lap with another kind of variation."""
    for i in range(n):
        row = base[i % len(base)]
        kind = (i // len(base)) % 6
        messages = row.get("messages") or []
        if kind in (1, 2, 3):
            messages = _vary_user(messages, kind, i)
        elif kind == 4:
            messages = [*messages, _EXTRA_TURN]
        yield {**row, "id": f"{row.get('id')}#{i}", "messages": messages}


def _vocabulary(base: list[dict[str, Any]]) -> list[str]:
    """Distinct words of the real rows (every script), in first-seen order."""
    seen: dict[str, None] = {}
    for row in base:
        for word in conversation_text(row, max_chars=2000).split():
            seen.setdefault(word, None)
    return list(seen)


def _synthetic_words(vocab: list[str], seed: int, n: int) -> list[str]:
    # splitmix64 of (seed, position): the same words for the same seed, cheaper than a generator per row.
    h = np.arange(n, dtype=np.uint64) + np.uint64(seed * 0x9E3779B97F4A7C15 % (1 << 64))
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return [vocab[j] for j in ((h ^ (h >> np.uint64(31))) % np.uint64(len(vocab))).tolist()]


def synthetic_rows(base: list[dict[str, Any]], n: int, *, near_share: float = 0.15,
                   exact_share: float = 0.05) -> Iterator[dict[str, Any]]:
    """``n`` distinct rows of real words in random order, with near and exact copies mixed in.

    Unlike ``variants`` (a few thousand rows replicated, so almost every row is a copy and the
    index stays small), most rows here are new: the index grows with the stream, as it does
    on a real corpus. A near copy is an earlier row (anywhere before it) with two words
    changed (estimated Jaccard about 0.9); an exact copy repeats an earlier row as it was.
    Row ``i`` is generated from seed ``i``, so copies need no memory of earlier rows.
    """
    vocab = _vocabulary(base)
    pick = np.random.default_rng(0)
    for i in range(n):
        draw = pick.random()
        src = int(pick.integers(0, i)) if i else 0
        if i and draw < near_share:
            words = _synthetic_words(vocab, src, 90)
            for pos in pick.integers(0, 12, 2):
                words[int(pos)] = vocab[int(pick.integers(0, len(vocab)))]
        elif i and draw < near_share + exact_share:
            words = _synthetic_words(vocab, src, 90)
        else:
            words = _synthetic_words(vocab, i, 90)
        yield {"id": f"syn-{i}", "messages": [{"role": "user", "content": " ".join(words[:20])},
                                              {"role": "assistant", "content": " ".join(words[20:])}]}


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_mode(mode: str, n: int) -> dict[str, float]:
    """Run one mode in this process; returns seconds, kept and peak RSS."""
    base = load_all_rows()
    start_rss = _peak_mib()
    t0 = time.perf_counter()
    if mode == "memory":
        kept, _ = DedupFilter()(list(variants(base, n)))
        n_kept = len(kept)
    elif mode == "stream":
        with tempfile.TemporaryDirectory() as tmp:
            store = SqliteSignatureStore(Path(tmp) / "sig.db")
            n_kept = sum(
                ok for ok, _ in stream_dedup(lambda: variants(base, n), store, batch_size=50_000)
            )
            store.close()
    elif mode == "generate":
        n_kept = sum(1 for _ in variants(base, n))
    elif mode == "near":
        # Near-dedup with signatures streamed to a SQLite file: memory must stay flat.
        near = NearDedupFilter(max_chars=NEAR_MAX_CHARS)
        n_kept = sum(ok for ok, _ in near.stream(synthetic_rows(base, n)))
    elif mode == "near-memory":
        n_kept = _near_in_memory(synthetic_rows(base, n))
    elif mode == "near-generate":
        n_kept = sum(1 for _ in synthetic_rows(base, n))
    else:
        n_kept = _reference_style(list(variants(base, n)))
    return {
        "seconds": time.perf_counter() - t0,
        "kept": n_kept,
        "peak_mib": _peak_mib(),
        "base_mib": start_rss,
    }


def _near_in_memory(rows: Iterator[dict[str, Any]]) -> int:
    # The previous way: every MinHash object and the LSH tables held in memory.
    step = NearDedupFilter(max_chars=NEAR_MAX_CHARS)
    lsh = MinHashLSH(threshold=step.threshold, num_perm=step.num_perm)
    sketches: dict[int, Any] = {}
    for row in rows:
        mh = step.minhash(conversation_text(row, max_chars=step.max_chars))
        if any(mh.jaccard(sketches[k]) >= step.threshold for k in lsh.query(mh)):
            continue
        sketches[len(sketches)] = mh
        lsh.insert(len(sketches) - 1, mh)
    return len(sketches)


def _reference_style(rows: list[dict[str, Any]]) -> int:
    # The reference's per-row work: stdlib JSON + MD5 of the signature pair and of all messages.
    winners: dict[str, tuple[str, int]] = {}
    for row in rows:
        msgs = row["messages"]
        users = [m for m in msgs if m.get("role") == "user" and (m.get("content") or "").strip()]
        asst = [
            m for m in msgs if m.get("role") == "assistant" and (m.get("content") or "").strip()
        ]
        pair = [
            (users[0]["content"].strip() if users else "")[:200],
            (asst[0]["content"].strip() if asst else "")[:200],
        ]
        sig = hashlib.md5(json.dumps(pair, ensure_ascii=False).encode()).hexdigest()
        full = hashlib.md5(
            json.dumps(msgs, sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()
        cur = winners.get(sig)
        if cur is None or (cur[0] != full and len(msgs) > cur[1]):
            winners[sig] = (full, len(msgs))
    return len(winners)


def _child(mode: str, n: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--rows", str(n)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Parse arguments, run each mode in a child process, print the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--baseline-rows", type=int, default=100_000)
    ap.add_argument("--near-rows", type=int, default=1_000_000, help="rows for the near-dedup peak-memory run")
    ap.add_argument("--only-near", action="store_true", help="run the near-dedup modes only")
    ap.add_argument("--child", default="")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_mode(args.child, args.rows)))
        return
    if not args.only_near:
        results = {m: _child(m, args.rows) for m in ("generate", "memory", "stream")}
        small = {m: _child(m, args.baseline_rows) for m in ("memory", "reference")}
        _report(args.rows, results, args.baseline_rows, small)
    near = _child("near", args.near_rows)
    near_mem = _child("near-memory", args.baseline_rows)
    near_small = _child("near", args.baseline_rows)
    print(f"\nnear-dedup (MinHash, {NEAR_MAX_CHARS} chars/row shingled); target: 1,000,000 rows < 2048 MiB peak")
    print(f"{'mode':<34}{'rows':>10}{'seconds':>9}{'rows/s':>9}{'kept':>10}{'peak MiB':>10}")
    for name, n, r in (("signatures on disk (ours)", args.near_rows, near),
                       ("signatures on disk (ours)", args.baseline_rows, near_small),
                       ("signatures in memory (datasketch)", args.baseline_rows, near_mem)):
        print(f"{name:<34}{n:>10,}{r['seconds']:>9.1f}{n / r['seconds']:>9,.0f}{int(r['kept']):>10,}"
              f"{r['peak_mib']:>10,.0f}")
    # Same row count on both sides: the on-disk run at --baseline-rows, not the --near-rows one.
    for figure, key, unit in (("seconds", "seconds", "s"), ("peak MiB", "peak_mib", "MiB")):
        headline("dedup", f"near-dedup {args.baseline_rows:,} rows, signatures on disk, {figure}", near_small[key],
                 near_mem[key], baseline_name="signatures in memory (datasketch)", unit=unit, higher_is_better=False)


def _report(
    n: int, res: dict[str, dict[str, float]], nb: int, small: dict[str, dict[str, float]]
) -> None:
    print(f"global dedup, {n:,} rows (real rows x variations); targets: < 60 s, < 2048 MiB peak")
    print(f"{'mode':<22}{'seconds':>9}{'rows/s':>12}{'kept':>10}{'peak MiB':>10}")
    for mode in ("generate", "memory", "stream"):
        r = res[mode]
        print(
            f"{mode:<22}{r['seconds']:>9.1f}{n / r['seconds']:>12,.0f}"
            f"{int(r['kept']):>10,}{r['peak_mib']:>10,.0f}"
        )
    dedup_mem = res["memory"]["seconds"] - res["generate"]["seconds"]
    print(
        f"stream / memory time ratio: {res['stream']['seconds'] / res['memory']['seconds']:.2f}; "
        f"stream / memory peak ratio: {res['stream']['peak_mib'] / res['memory']['peak_mib']:.2f}; "
        f"dedup-only time in memory mode (minus generation): {dedup_mem:.1f} s"
    )
    for figure, key, unit in (("seconds", "seconds", "s"), ("peak MiB", "peak_mib", "MiB")):
        headline("dedup", f"global dedup {n:,} rows, stream, {figure}", res["stream"][key], res["memory"][key],
                 baseline_name="memory mode", unit=unit, higher_is_better=False)
    ours, ref = small["memory"], small["reference"]
    print(
        f"baseline at {nb:,} rows: ours {nb / ours['seconds']:,.0f} rows/s"
        f" vs reference-style {nb / ref['seconds']:,.0f} rows/s"
        f" (speed-up x{ref['seconds'] / ours['seconds']:.2f});"
        f" kept ours {int(ours['kept']):,} vs reference-style {int(ref['kept']):,}"
    )
    headline("dedup", f"global dedup {nb:,} rows, ours (memory mode)", nb / ours["seconds"], nb / ref["seconds"],
             baseline_name="reference-style", unit="rows/s")


if __name__ == "__main__":
    main()
