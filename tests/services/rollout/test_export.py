"""Export writers: token-level Parquet read back with pyarrow, and JSONL of messages."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from services.rollout.export import PARQUET_SCHEMA, DistillWeights, ExportItem, jsonl_row, write_jsonl, write_parquet
from shared.schema import Trajectory

MESSAGES = [
    {"role": "user", "content": "status of A1?"},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "query_status", "arguments": {"item_id": "A1"}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
    {"role": "assistant", "content": "It shipped."},
]


def _traj(index: int, *, tokens: bool = True) -> Trajectory:
    data = {"id": f"t{index}", "group_id": "g1", "sample_index": index, "messages": MESSAGES, "turns": 2,
            "stop_reason": "stop"}
    if tokens:
        # Sampled (1), tool observation and bridge tokens (0), sampled again (1).
        data["tokens"] = {"prompt_ids": [1, 2, 3], "response_ids": [10 + index, 11, 90, 91, 12],
                          "loss_mask": [1, 1, 0, 0, 1], "logprobs": [-0.5, -0.25, None, None, -1.0]}
    return Trajectory.model_validate(data)


def _items() -> list[ExportItem]:
    return [ExportItem(_traj(0), task_id="task-a", reward=1.0, advantage=1.5),
            ExportItem(_traj(1), task_id="task-a", reward=0.0, advantage=-0.5),
            ExportItem(_traj(2, tokens=False), task_id="task-a", reward=None, advantage=None)]


def test_parquet_round_trip_keeps_tokens_masks_logprobs_and_broadcasts_advantages(tmp_path: Path) -> None:
    path = tmp_path / "out.parquet"
    assert write_parquet(_items(), str(path), batch_rows=2) == 3
    parquet = pq.ParquetFile(path)
    assert parquet.num_row_groups == 2  # written in batches, not all at once
    assert parquet.schema_arrow == PARQUET_SCHEMA
    rows = parquet.read().to_pylist()
    first, second, messages_only = rows
    assert [r["id"] for r in rows] == ["t0", "t1", "t2"] and {r["group_id"] for r in rows} == {"g1"}
    assert first["prompt_ids"] == [1, 2, 3] and first["response_ids"] == [10, 11, 90, 91, 12]
    assert first["response_mask"] == [1, 1, 0, 0, 1]
    assert first["logprobs"] == [-0.5, -0.25, None, None, -1.0]
    assert first["advantages"] == [1.5, 1.5, 0.0, 0.0, 1.5]
    assert second["advantages"] == [-0.5, -0.5, 0.0, 0.0, -0.5] and second["reward"] == 0.0
    assert first["reward"] == 1.0 and first["advantage"] == 1.5 and first["task_id"] == "task-a"
    assert first["stop_reason"] == "stop" and first["turns"] == 2 and first["sample_index"] == 0
    assert json.loads(first["messages"])[1]["tool_calls"][0]["function"]["arguments"] == '{"item_id": "A1"}'
    assert messages_only["response_ids"] == [] and messages_only["reward"] is None
    assert messages_only["advantage"] is None and messages_only["advantages"] == []


def test_parquet_columns_have_trainer_types(tmp_path: Path) -> None:
    path = tmp_path / "out.parquet"
    write_parquet(_items()[:1], str(path))
    schema = pq.read_schema(path)
    assert schema.field("prompt_ids").type == pa.list_(pa.int32())
    assert schema.field("response_mask").type == pa.list_(pa.int8())
    assert schema.field("logprobs").type == pa.list_(pa.float32())
    assert schema.field("advantages").type == pa.list_(pa.float32())
    table = pq.read_table(path)
    input_ids = table["prompt_ids"][0].as_py() + table["response_ids"][0].as_py()
    assert len(input_ids) == 8 and len(table["advantages"][0]) == len(table["response_ids"][0])


def test_empty_export_is_a_valid_file_with_the_schema() -> None:
    buffer = io.BytesIO()
    assert write_parquet([], buffer) == 0
    table = pq.read_table(io.BytesIO(buffer.getvalue()))
    assert table.num_rows == 0 and table.schema == PARQUET_SCHEMA


def test_missing_loss_mask_means_every_token_was_sampled(tmp_path: Path) -> None:
    traj = Trajectory.model_validate({"messages": MESSAGES[:1] + MESSAGES[-1:],
                                      "tokens": {"prompt_ids": [1], "response_ids": [5, 6]}})
    path = tmp_path / "one.parquet"
    write_parquet([ExportItem(traj, reward=1.0, advantage=0.25)], str(path))
    row = pq.read_table(path).to_pylist()[0]
    assert row["response_mask"] == [1, 1] and row["advantages"] == [0.25, 0.25] and row["logprobs"] == [None, None]


def test_jsonl_rows_are_trajectory_rows_plus_reward_and_advantage() -> None:
    buffer = io.BytesIO()
    assert write_jsonl(_items(), buffer) == 3
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert [row["id"] for row in lines] == ["t0", "t1", "t2"]
    assert lines[0]["reward"] == 1.0 and lines[0]["advantage"] == 1.5 and lines[0]["task_id"] == "task-a"
    assert lines[0]["messages"][2] == {"role": "tool", "tool_call_id": "c1", "content": "shipped"}
    assert lines[0]["tokens"]["loss_mask"] == [1, 1, 0, 0, 1]
    assert lines[2]["reward"] is None and "tokens" not in lines[2]
    assert Trajectory.model_validate(lines[1]).tokens is not None  # a row reads back as a Trajectory


def test_distillation_columns_weigh_teacher_minus_student_on_sampled_tokens() -> None:
    traj = _traj(0)
    assert traj.tokens is not None
    traj.tokens.teacher_logprobs = [-0.25, -1.0, None, None, -0.5]
    items = [ExportItem(traj, task_id="task-a", reward=1.0, advantage=2.0,
                        distill=DistillWeights(reward_weight=0.5, distill_weight=2.0)),
             ExportItem(_traj(1), task_id="task-a", reward=0.0, advantage=-1.0,
                        distill=DistillWeights(reward_weight=0.5, distill_weight=2.0))]
    buf = io.BytesIO()
    write_parquet(items, buf)
    taught, untaught = pq.read_table(io.BytesIO(buf.getvalue())).to_pylist()
    # teacher - student: +0.25 and -0.75 on the first two sampled tokens, +0.5 on the last; 0 off-policy.
    assert taught["distill_advantages"] == [0.25, -0.75, 0.0, 0.0, 0.5]
    assert taught["teacher_logprobs"] == [-0.25, -1.0, None, None, -0.5]
    assert taught["advantages"] == [0.5 * 2.0 + 2.0 * 0.25, 0.5 * 2.0 - 2.0 * 0.75, 0.0, 0.0, 0.5 * 2.0 + 2.0 * 0.5]
    # A member the teacher could not score keeps its reward advantage only (weighted), no distillation.
    assert untaught["teacher_logprobs"] == [] and untaught["distill_advantages"] == []
    assert untaught["advantages"] == [-0.5, -0.5, 0.0, 0.0, -0.5]
    line = jsonl_row(items[0])
    assert line["distill_advantages"] == taught["distill_advantages"] and line["tokens"]["teacher_logprobs"]
