"""Reward benchmarks: tool_call scoring throughput on real BFCL rows, advantages for 1,000 groups of 16,
and a report of where the graded scorer and the BFCL verdict disagree (and why).

Run: PYTHONPATH=. python bench/reward.py  (TRAJFORGE_SHARED_DATA_DIR if the data is not beside the repo)
"""

from __future__ import annotations

import copy
import json
import time
from collections import Counter
from typing import Any

import numpy as np

from bench import headline
from services.reward.advantages import grpo, grpo_batch
from services.reward.components.bfcl import bfcl_verdict
from services.reward.components.tool_call import ToolCallTruth, score_tool_call
from shared.data import load_rows
from shared.schema import Trajectory


def _output(calls: list[dict[str, Any]] | None) -> dict[str, Any]:
    if not calls:
        return {"role": "assistant", "content": "I can't help with that."}
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
        for i, c in enumerate(calls)]}


def _cases() -> list[tuple[dict[str, Any], Trajectory, ToolCallTruth]]:
    cases = []
    for row in load_rows("bfcl_v4_single_turn.jsonl"):
        gt = row["ground_truth"]
        traj = Trajectory(messages=[*row["messages"], _output(gt.get("tool_calls"))], tools=row["tools"])
        cases.append((row, traj, ToolCallTruth.model_validate(gt)))
    return cases


def _naive(traj: Trajectory, truth: ToolCallTruth) -> float:
    """Baseline: exact equality of name and decoded arguments, in order (what a sloppy scorer does)."""
    calls = traj.messages[-1].tool_calls or []
    want = truth.tool_calls or []
    got = [(c.function.name, json.loads(c.function.arguments)) for c in calls]
    return float(got == [(w.name, w.arguments) for w in want])


def _rate(fn: Any, cases: list[Any], min_s: float = 1.0) -> float:
    done, started = 0, time.process_time()
    while time.process_time() - started < min_s:
        for _, traj, truth in cases:
            fn(traj, truth)
        done += len(cases)
    return done / (time.process_time() - started)


def bench_scoring(cases: list[Any]) -> None:
    """Print graded tool_call throughput next to the naive equality baseline."""
    graded = _rate(lambda t, g: score_tool_call(t, g), cases)
    naive = _rate(_naive, cases)
    print("tool_call scoring on real BFCL rows (per core: CPU time of this process)")
    print(f"  graded tool_call : {graded:10,.0f} traj/s   target 20,000/s   ratio to target {graded / 20000:.2f}")
    print(f"  naive equality   : {naive:10,.0f} traj/s   (baseline)        graded/naive {graded / naive:.2f}")
    headline("reward", "graded tool_call scoring", graded, naive, baseline_name="naive equality", unit="traj/s")


def bench_advantages() -> None:
    """Print vectorised GRPO time for 1,000 groups of 16 next to a per-group loop."""
    rewards = np.random.default_rng(0).random((1000, 16))
    started = time.perf_counter()
    for _ in range(20):
        grpo_batch(rewards)
    vectorised = (time.perf_counter() - started) / 20
    started = time.perf_counter()
    for group in rewards:
        grpo(group)
    looped = time.perf_counter() - started
    print("GRPO advantages, 1,000 groups x 16")
    print(f"  vectorised batch : {vectorised * 1e3:8.2f} ms")
    print(f"  per-group loop   : {looped * 1e3:8.2f} ms   (baseline)   speed-up {looped / vectorised:.1f}x")
    headline("reward", "GRPO advantages, 1,000 x 16", vectorised * 1e3, looped * 1e3, baseline_name="per-group loop",
             unit="ms", higher_is_better=False)


def _perturb(calls: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    out = []
    for key, value in calls[0]["arguments"].items():
        if isinstance(value, str) and value:
            variant = copy.deepcopy(calls)
            variant[0]["arguments"][key] = value.upper().replace(" ", "_")
            out.append(("string_case_and_punctuation", variant))
            break
    for key, value in calls[0]["arguments"].items():
        if isinstance(value, int) and not isinstance(value, bool):
            variant = copy.deepcopy(calls)
            variant[0]["arguments"][key] = float(value)
            out.append(("integral_float", variant))
            break
    dropped = copy.deepcopy(calls)
    if dropped[0]["arguments"]:
        dropped[0]["arguments"].pop(next(iter(dropped[0]["arguments"])))
        out.append(("dropped_first_argument", dropped))
    return out


def report_disagreements(cases: list[Any]) -> None:
    """Print where graded mode and BFCL mode disagree, by output variant."""
    counts: Counter[tuple[str, str]] = Counter()
    for row, traj, truth in cases:
        if truth.decision != "tool_call" or not truth.tool_calls:
            continue
        variants = [("ground_truth", row["ground_truth"]["tool_calls"]), *_perturb(row["ground_truth"]["tool_calls"])]
        for kind, calls in variants:
            last = Trajectory(messages=[_output(calls)]).messages[0]
            t = traj.model_copy(update={"messages": [*traj.messages[:-1], last]})
            meta = {"ground_truth_bfcl": row["ground_truth_bfcl"], "category": row["category"],
                    "language": row["language"]}
            strict = bfcl_verdict(t, meta).passed
            full = score_tool_call(t, truth).score >= 1.0 - 1e-9
            if strict != full:
                counts[(kind, "bfcl pass, graded < 1" if strict else "graded 1, bfcl fail")] += 1
    print("Graded vs BFCL disagreements on real rows (output variant, direction): count")
    for (kind, direction), n in sorted(counts.items()):
        print(f"  {kind:28s} {direction:22s} {n:5d}")
    print("  why: graded keeps punctuation/underscores in strings (BFCL strips them); graded accepts 3.0 for an")
    print("  integer (BFCL rejects); graded GT here is the canonical single answer, BFCL accepts every listed")
    print("  alternative and '' (omit); graded gives partial credit where BFCL is all-or-nothing.")


def main() -> None:
    """Run every benchmark and print the figures."""
    cases = _cases()
    bench_scoring(cases)
    bench_advantages()
    report_disagreements(cases)


if __name__ == "__main__":
    main()
