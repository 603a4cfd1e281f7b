"""The main job end to end on embedded defaults (SQLite, in-process work, the real local model)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from services.inference.config import engine_config
from tests.conftest import REPO_ROOT


@pytest.mark.timeout(660)  # the real model on a shared CPU
def test_demo_runs_the_main_job_with_no_services_and_no_bubblewrap(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAJFORGE_")}
    # A bare machine: no bubblewrap on PATH. The demo says so once and runs with the code tools off.
    (tmp_path / "bin").mkdir()
    env["PATH"], env["COLUMNS"] = str(tmp_path / "bin"), "200"
    # Reuse converted model weights if a previous run cached them; no Postgres, no Redis.
    env |= {"TRAJFORGE_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO_ROOT),
            "TRAJFORGE_MODEL_CACHE_DIR": str(engine_config().cache_dir)}
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "services.cli", "demo", "--tasks", "2", "--group-size", "2", "--max-turns", "2",
         "--max-tokens-per-turn", "16", "--rows-per-file", "15", "--out", str(out)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "sqlite" in result.stdout and "succeeded" in result.stdout
    assert result.stdout.count("runs without the sandbox") == 1
    assert "groups have non-zero reward variance" in result.stdout
    job_id = re.search(r"rollout job ([0-9a-f-]{36})", result.stdout)
    assert job_id and f"/ui/rollouts/{job_id.group(1)}" in result.stdout
    table = pq.read_table(out / "rollout.parquet")
    assert table.num_rows == 4
    for ids, mask, logprobs in zip(table["response_ids"].to_pylist(), table["response_mask"].to_pylist(),
                                   table["logprobs"].to_pylist(), strict=True):
        assert len(ids) == len(mask) == len(logprobs) and sum(mask) > 0
    assert (out / "rollout.jsonl").read_text().count("\n") == 4


def test_demo_console_is_wide_when_written_to_a_file_or_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.demo import make_console

    monkeypatch.delenv("COLUMNS", raising=False)
    assert make_console(stream_is_tty=False).width == 160  # rich alone would give 80
    monkeypatch.setenv("COLUMNS", "100")
    assert make_console(stream_is_tty=False).width == 100  # the user's choice stands
