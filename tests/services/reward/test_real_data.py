"""The graded scorer on real public rows: ground truth fed back scores 1.0; full runs never fail."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from services.reward.service import score_trajectories
from services.reward.spec import RewardSpec
from shared.data import load_rows
from shared.schema import Trajectory


def _fed_back(row: dict[str, Any]) -> Trajectory:
    gt = row["ground_truth"]
    if gt["decision"] == "tool_call" and gt["tool_calls"]:
        reply: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"], ensure_ascii=False)}}
            for i, c in enumerate(gt["tool_calls"])]}
    else:
        reply = {"role": "assistant", "content": gt.get("reference_content") or "답변드리겠습니다."}
    return Trajectory(messages=[*row["messages"], reply], tools=row["tools"], metadata={"ground_truth": gt})


@pytest.mark.parametrize("name", ["ko_functionchat_singlecall.jsonl", "ko_functionchat_calldecision.jsonl",
                                  "bfcl_v4_single_turn.jsonl"])
def test_ground_truth_fed_back_scores_one(name: str) -> None:
    rows = [r for r in load_rows(name) if r.get("ground_truth") and r["ground_truth"].get("tool_calls") is not None]
    results = score_trajectories([_fed_back(r) for r in rows], RewardSpec())
    below = [(r["id"], res.score, res.error) for r, res in zip(rows, results) if res.score != pytest.approx(1.0)]
    assert len(rows) > 100
    assert below == []


def test_tau_bench_trajectories_score_without_failures() -> None:
    rows = load_rows("tau_bench_airline_gpt4o_trajectories.jsonl")
    trajs = [Trajectory(messages=r["messages"], tools=r["tools"], metadata={"ground_truth": r["ground_truth"]})
             for r in rows]
    results = score_trajectories(trajs, RewardSpec())
    assert len(results) == 200 and all(res.status == "ok" for res in results)
    assert all(res.score is not None and math.isfinite(res.score) and 0.0 <= res.score <= 1.0 for res in results)
