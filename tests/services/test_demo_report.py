"""The main job's summary: per-group rewards, advantages and tokens read back from the Parquet export."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rich.console import Console

from services.demo_clean import CleanSummary
from services.demo_report import clean_tables, group_stats, groups_table
from services.reward.advantages import grpo
from services.rollout.export import ExportItem, write_parquet
from shared.schema import Trajectory


def _item(task: str, index: int, reward: float | None, advantage: float | None) -> ExportItem:
    traj = Trajectory.model_validate({
        "group_id": f"g-{task}", "sample_index": index, "messages": [{"role": "user", "content": "hi"}],
        "tokens": {"prompt_ids": [1, 2, 3], "response_ids": [4, 5, 6, 7], "loss_mask": [1, 1, 0, 1]}})
    return ExportItem(traj, task_id=task, reward=reward, advantage=advantage)


def _render(table) -> str:
    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def test_group_stats_use_stored_advantages_and_compute_missing_ones(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    write_parquet([_item("a", 0, 1.0, 1.0), _item("a", 1, 0.0, -1.0),
                   _item("b", 0, 0.5, None), _item("b", 1, 0.0, None), _item("b", 2, None, None)], str(path))
    asked: list[list[float | None]] = []

    def compute(groups: list[list[float | None]]) -> list[list[float]]:
        asked.extend(groups)
        return [grpo([r or 0.0 for r in g]).tolist() for g in groups]

    groups = group_stats(path, compute)
    assert asked == [[0.5, 0.0, None]]  # only the group without stored advantages
    assert groups["a"].advantages == [1.0, -1.0] and groups["b"].advantages[0] > 0
    assert groups["a"].prompt_tokens == 6 and groups["a"].response_tokens == 8 and groups["a"].sampled_tokens == 6
    text = _render(groups_table(groups))
    assert "0.500" in text and "0.250" in text  # means of a (1, 0) and b (0.5, 0; the unscored one left out)
    assert "all" in text and "15" in text  # 5 members × 3 prompt tokens


def test_clean_tables_list_files_and_reasons() -> None:
    summary = CleanSummary(per_file={"f.jsonl": {"rows": 5, "kept": 3, "dropped": 1, "invalid": 1}},
                           drop_reasons=Counter({"HardFilter: trivial_single_turn": 1, "invalid: bad json": 1}))
    files, reasons = (_render(t) for t in clean_tables(summary))
    assert "f.jsonl" in files and "5" in files
    assert "HardFilter: trivial_single_turn" in reasons and "invalid: bad json" in reasons
