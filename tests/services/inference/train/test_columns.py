"""The Parquet export loads with ``datasets`` and maps onto TRL's GRPO and verl's DataProto batch keys."""

from __future__ import annotations

from pathlib import Path

import datasets
import torch

from services.inference.train.columns import trl_batch, verl_batch
from services.rollout.export import ExportItem, write_parquet
from shared.schema import Trajectory


def _item(group: str, index: int, prompt: list[int], response: list[int], mask: list[int],
          reward: float, advantage: float) -> ExportItem:
    traj = Trajectory.model_validate({
        "group_id": group, "sample_index": index, "messages": [{"role": "user", "content": "q"}],
        "tokens": {"prompt_ids": prompt, "response_ids": response, "loss_mask": mask,
                   "logprobs": [-0.1 * (i + 1) for i in range(len(response))], "weight_version": "2"}})
    return ExportItem(traj, task_id=group, reward=reward, advantage=advantage)


def test_export_loads_with_datasets_and_maps_onto_trl_and_verl(tmp_path: Path) -> None:
    path = tmp_path / "rollout.parquet"
    write_parquet([_item("g", 0, [5, 6, 7], [8, 9, 10, 11], [1, 1, 0, 1], 1.0, 0.7),
                   _item("g", 1, [5, 6], [12], [1], 0.0, -0.7)], str(path))
    ds = datasets.Dataset.from_parquet(str(path))
    assert isinstance(ds, datasets.Dataset) and ds.num_rows == 2
    assert {"prompt_ids", "response_ids", "response_mask", "logprobs", "advantages", "weight_version"} <= set(
        ds.column_names)
    rows = ds[:]

    trl = trl_batch(rows)
    assert set(trl) == {"prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "old_per_token_logps",
                        "advantages"}
    assert trl["prompt_ids"].tolist() == [[5, 6, 7], [0, 5, 6]] and trl["prompt_mask"].tolist()[1] == [0, 1, 1]
    assert trl["completion_mask"].tolist() == [[1, 1, 0, 1], [1, 0, 0, 0]]
    assert trl["old_per_token_logps"][0, 2] == 0.0  # a tool/template token has no sampling logprob
    assert torch.allclose(trl["advantages"], torch.tensor([0.7, -0.7]))

    verl = verl_batch(rows)
    assert verl["input_ids"].shape == (2, 7) and verl["attention_mask"].sum().item() == 3 + 4 + 2 + 1
    assert verl["input_ids"][1].tolist() == [0, 5, 6, 12, 0, 0, 0]
    assert verl["position_ids"][1].tolist()[:4] == [0, 0, 1, 2]
    assert verl["advantages"][0].tolist() == [0.699999988079071, 0.699999988079071, 0.0, 0.699999988079071]
    assert verl["token_level_scores"][0].tolist() == [0.0, 0.0, 0.0, 1.0] and verl["uid"] == ["g", "g"]
    assert verl["old_log_probs"].shape == verl["responses"].shape == verl["response_mask"].shape
