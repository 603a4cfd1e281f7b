"""The real TRL and verl read our Parquet export: their own dataset, collate, advantage and loss code on it.

Both live in their own virtual environment (built by scripts/trainer_peers_venv.sh, with
--no-deps installs of trl, verl and ray beside the light packages their data code imports), so
the check runs there in a subprocess (peers/trainer_peers_check.py). Building that environment is
part of the test: if it cannot be built the test fails, it never skips.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from services.rollout.export import ExportItem, write_parquet
from shared.advantages import grpo
from shared.schema import Trajectory
from tests.conftest import REPO_ROOT

CHECK = Path(__file__).parent / "peers" / "trainer_peers_check.py"
COLUMNS = REPO_ROOT / "services" / "inference" / "train" / "columns.py"
GROUPS = {"g1": [1.0, 0.2, 0.2, 0.0], "g2": [0.5, 0.5, 0.9, 0.1]}


def _export(path: Path) -> list[ExportItem]:
    items = []
    for group, rewards in GROUPS.items():
        for i, (reward, adv) in enumerate(zip(rewards, grpo(rewards), strict=True)):
            response = [10 + i, 11, 12, 13, 14][: 2 + i]
            mask = [0 if k == 2 else 1 for k in range(len(response))]  # a tool-output token mid-response
            traj = Trajectory.model_validate({
                "group_id": group, "sample_index": i, "messages": [{"role": "user", "content": "q"}],
                "tokens": {"prompt_ids": [5, 6, 7, 8][: 3 + i % 2], "response_ids": response, "loss_mask": mask,
                           "logprobs": [-0.1 * (k + 1) for k in range(len(response))], "weight_version": "1"}})
            items.append(ExportItem(traj, task_id=group, reward=reward, advantage=float(adv)))
    write_parquet(items, str(path))
    return items


@pytest.fixture(scope="module")
def peers_python() -> Path:
    """Python of the trainer-peers venv, built on first use; a failed build fails the test loudly."""
    out = subprocess.run([str(REPO_ROOT / "scripts" / "trainer_peers_venv.sh")], capture_output=True, text=True,
                         timeout=1800)
    assert out.returncode == 0, f"building the TRL/verl venv failed:\n{out.stderr[-4000:]}"
    return Path(out.stdout.strip().splitlines()[-1]) / "bin" / "python"


@pytest.mark.timeout(900)  # imports of transformers, TRL and verl on a shared CPU
def test_trl_and_verl_run_their_own_data_code_on_our_export(tmp_path: Path, peers_python: Path) -> None:
    export, report_path = tmp_path / "rollout.parquet", tmp_path / "report.json"
    items = _export(export)
    run = subprocess.run([str(peers_python), str(CHECK), str(export), str(COLUMNS), str(report_path)],
                         capture_output=True, text=True, timeout=840)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    report = json.loads(report_path.read_text())
    assert report["num_rows"] == len(items)

    verl = report["verl"]
    assert {"prompts", "responses", "input_ids", "attention_mask", "position_ids", "response_mask", "old_log_probs",
            "advantages", "token_level_scores"} <= set(verl["keys"])
    assert verl["attention_tail_covers_response_mask"]
    # verl reads the sequence reward off the token scores and groups by uid; its GRPO (unbiased std)
    # is ours (population std) scaled by sqrt((n-1)/n).
    assert verl["sequence_scores"] == pytest.approx([r for rs in GROUPS.values() for r in rs])
    ours = [i.advantage for i in items]
    scale = math.sqrt(3 / 4)
    assert verl["grpo_advantage"] == pytest.approx([a * scale for a in ours], abs=1e-4)
    assert math.isfinite(verl["token_mean_loss"])

    sft = report["trl_sft"]
    # TRL built the labels from our completion mask: prompt and tool tokens are -100, sampled ones kept.
    for labels, item in zip(sft["labels"], items, strict=True):
        tokens = item.trajectory.tokens
        assert tokens is not None
        expected = [-100] * len(tokens.prompt_ids) + [
            t if m else -100 for t, m in zip(tokens.response_ids, tokens.loss_mask or [], strict=True)]
        assert labels == expected
    assert sft["collated_keys"] == ["attention_mask", "input_ids", "labels"] and sft["steps"] == 1
    assert math.isfinite(sft["train_loss"])

    grpo_report = report["trl_grpo"]
    assert math.isfinite(grpo_report["loss"]) and grpo_report["grad_abs_sum"] > 0
