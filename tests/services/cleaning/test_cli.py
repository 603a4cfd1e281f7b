"""``trajforge clean`` as a subprocess on real data files and on bad input files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from tests.conftest import REPO_ROOT, shared_data_dir


def _clean(src: Path, tmp: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], list[Any], list[Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAJFORGE_")}
    env |= {"TRAJFORGE_HOME": str(tmp / "home"), "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "200"}
    kept, dropped = tmp / "kept.jsonl", tmp / "dropped.jsonl"
    proc = subprocess.run([sys.executable, "-m", "services.cli", "clean", str(src), "-o", str(kept), "--dropped",
                           str(dropped), *extra], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    def read(p: Path) -> list[Any]:
        return [orjson.loads(x) for x in p.read_bytes().splitlines()] if p.exists() else []

    return proc, read(kept), read(dropped)


def test_real_file_default_pipeline_with_dedup(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    lines = (shared_data_dir() / "glaive_toolcall_zh_llamafactory.jsonl").read_bytes().splitlines()[:150]
    lines += (shared_data_dir() / "ko_functionchat_dialog.jsonl").read_bytes().splitlines()[:50]
    rows = [{**orjson.loads(line), "id": f"r{i}"} for i, line in enumerate(lines)]
    rows += [{**r, "id": f"copy-{r['id']}"} for r in rows[:20]]
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    proc, kept, dropped = _clean(src, tmp_path, "--batch-size", "64", "--near-dedup")
    assert proc.returncode == 0, proc.stderr
    assert len(kept) + len(dropped) == len(rows)
    assert {r["id"] for r in kept} | {r["id"] for r in dropped} == {r["id"] for r in rows}
    assert sum(r["drop_reason"] == "duplicate" for r in dropped) >= 20
    assert all(r["drop_step"] and r["drop_reason"] for r in dropped)
    for step in ("MessageNormalizer", "HardFilter", "TokenSoupFilter", "DedupFilter", "NearDedupFilter"):
        assert step in proc.stderr
    assert f"kept {len(kept)} / dropped {len(dropped)} / invalid 0 / total {len(rows)}" in proc.stderr


def test_pipeline_file_and_no_dedup(tmp_path: Path) -> None:
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("pipeline:\n  - name: HardFilter\n    params: {max_rounds: 2}\n  - RefuseFilter\n")
    src = shared_data_dir() / "tau_bench_airline_gpt4o_trajectories.jsonl"
    proc, kept, dropped = _clean(src, tmp_path, "--pipeline", str(pipeline), "--no-dedup")
    assert proc.returncode == 0, proc.stderr
    assert len(kept) + len(dropped) == 200
    assert "too_many_rounds" in proc.stderr and "DedupFilter" not in proc.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("- name: NoSuchStep\n")
    proc, _, _ = _clean(src, tmp_path, "--pipeline", str(bad))
    assert proc.returncode == 2 and "Unknown cleaning step" in proc.stderr


def test_bad_lines_become_invalid_rows(tmp_path: Path) -> None:
    good = (shared_data_dir() / "zh_mt_bench_gpt4.jsonl").read_bytes().splitlines()[0]
    src = tmp_path / "bad.jsonl"
    src.write_bytes(b"\n".join([
        good, b"{broken json", b'{"id": "no-messages"}', b'{"messages": "text"}', b"[1, 2]",
        b'{"messages": [{"role": "user", "content": "\\ud800 x"}]}', b'{"id": "\xff\xfe"}',
        b'{"messages": [{"role": 5, "content": "x"}]}', b'{"id": "big", "pad": "' + b"x" * (50 << 20) + b'"}',
    ]) + b"\n")
    proc, kept, dropped = _clean(src, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(kept) == 1 and len(dropped) == 8
    assert all(r["drop_reason"] == "invalid_row" and r["drop_detail"] for r in dropped)
    details = " | ".join(r["drop_detail"] for r in dropped)
    for cause in ("invalid JSON", "no messages", "not a list", "not an object", "surrogate", "invalid UTF-8",
                  "role is missing", "over the"):
        assert cause in details, details
    assert "invalid 8 / total 9" in proc.stderr


def test_empty_file(tmp_path: Path) -> None:
    src = tmp_path / "empty.jsonl"
    src.write_bytes(b"")
    proc, kept, dropped = _clean(src, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert kept == [] and dropped == [] and "total 0" in proc.stderr
    proc, _, _ = _clean(tmp_path / "missing.jsonl", tmp_path)
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_explain_prints_the_evidence_of_each_drop(tmp_path: Path) -> None:
    labelled = Path(__file__).parent / "data" / "labelled_rows.jsonl"
    rows = [orjson.loads(x) for x in labelled.read_bytes().splitlines()]
    # The first labelled set only: --explain prints the first drops, and these fit under its limit.
    picked = [r for r in rows if r["class"] in ("ai_refusal", "word_salad", "list_repeat")
              and not r["id"].startswith("set")]  # set2/ ... set12/: the later sets
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(orjson.dumps({"id": r["id"], "messages": r["messages"]}) + b"\n" for r in picked))
    proc, kept, dropped = _clean(src, tmp_path, "--explain", "--no-dedup")
    assert proc.returncode == 0, proc.stderr
    assert len(kept) + len(dropped) == len(picked) and dropped
    assert all(isinstance(r["drop_evidence"], dict) and r["drop_evidence"]["check"] for r in dropped)
    out = proc.stderr
    assert "why rows were dropped" in out
    for row in dropped:
        assert row["drop_evidence"]["check"] in out, row
    assert {"ai_disclaimer", "script_salad", "repeated_item"} <= {r["drop_evidence"]["check"] for r in dropped}
