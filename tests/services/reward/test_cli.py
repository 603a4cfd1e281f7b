"""``trajforge score`` as a subprocess on real public rows, with bad lines mixed in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT, shared_data_dir

SPEC = "components:\n  - name: tool_call\n    weight: 1.0\n  - name: opd_tool_call\n    weight: 0\n"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.cli", "score", *args], check=False, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "120"})


def _head(name: str, n: int) -> list[bytes]:
    with (shared_data_dir() / name).open("rb") as fh:
        return [fh.readline() for _ in range(n)]


def _with_answer(line: bytes) -> bytes:
    """A BFCL question whose assistant turn is its ground-truth call (a perfect policy, labelled as such)."""
    row = json.loads(line)
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
             for i, c in enumerate(row["ground_truth"]["tool_calls"])]
    row["messages"].append({"role": "assistant", "content": None, "tool_calls": calls})
    return json.dumps(row).encode() + b"\n"


def test_score_real_rows_with_bad_lines(tmp_path: Path) -> None:
    tau, bfcl = _head("tau_bench_airline_gpt4o_trajectories.jsonl", 30), _head("bfcl_v4_single_turn.jsonl", 20)
    bad = [b"{not json\n", b'{"messages": "nope", "ground_truth": {}}\n',
           b'{"messages": [{"role": "user", "content": "hi"}], "ground_truth": "{broken"}\n',
           b'{"messages": [], "ground_truth": {"decision": "no_tool"}}\n']
    lines = tau + [_with_answer(line) for line in bfcl[:10]] + bfcl[10:] + bad
    (tmp_path / "in.jsonl").write_bytes(b"".join(lines))
    (tmp_path / "spec.yaml").write_text(SPEC)
    proc = _run(str(tmp_path / "in.jsonl"), "--reward", str(tmp_path / "spec.yaml"), "-o", str(tmp_path / "out.jsonl"))
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(out) == len(lines) == 54
    answered = out[30:40]
    assert all(r["reward"] == 1.0 and r["rewards"][0]["component"] == "tool_call" for r in answered)
    assert {r["rewards"][1]["component"] for r in answered} == {"opd_tool_call"}
    assert all(r["rewards"][0]["version"] and r["reward_status"] == "ok" for r in out[:50])
    assert "input_reward" in out[0]  # tau-bench's own reward is kept beside ours
    kinds = [r.get("reward_failure") for r in out[50:]]
    assert kinds == ["bad_line", "invalid_trajectory", "bad_ground_truth", "empty_trajectory"]
    assert "not valid JSON" in out[52]["reward_error"]
    scores = [r["reward"] for r in out[:50]]
    assert "rows" in proc.stdout and "54" in proc.stdout and "failed: bad_line" in proc.stdout
    assert f"{sum(scores) / len(scores):.4f}" in proc.stdout and "1.0000" in proc.stdout


def test_skill_weights_and_spec_errors(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_bytes(b"".join(_head("bfcl_v4_single_turn.jsonl", 3)))
    (tmp_path / "skill.yaml").write_text("name: demo\nreward_weights:\n  tool_accuracy: 0.8\n  reasoning_quality: 0.2\n")
    proc = _run(str(tmp_path / "in.jsonl"), "--reward", str(tmp_path / "skill.yaml"), "-o", str(tmp_path / "o.jsonl"))
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [[r["component"] for r in row["rewards"]] for row in rows] == [["tool_accuracy", "reasoning_quality"]] * 3
    assert rows[0]["rewards"][0]["weight"] == 0.8
    (tmp_path / "bad.yaml").write_text("components:\n  - name: tool_acc\n")
    proc = _run(str(tmp_path / "in.jsonl"), "--reward", str(tmp_path / "bad.yaml"), "-o", str(tmp_path / "o.jsonl"))
    assert proc.returncode == 2 and "tool_acc" in proc.stderr and "tool_call" in proc.stderr
    (tmp_path / "empty.yaml").write_text("just text\n")
    proc = _run(str(tmp_path / "in.jsonl"), "--reward", str(tmp_path / "empty.yaml"), "-o", str(tmp_path / "o.jsonl"))
    assert proc.returncode == 2 and "components" in proc.stderr
