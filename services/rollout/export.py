"""Export rollout trajectories for trainers: JSONL of messages and token-level Parquet.

An ``ExportItem`` is one stored trajectory with its task id, reward (the
weighted total of the job's reward spec) and advantage (``meta["advantage"]``).
Writers take any iterable of items and write in batches, so a large job is
never held in memory; ``services.rollout.export_store`` reads a job from the
database in pages and feeds them here.

Parquet columns (one row per trajectory) and what trainers call them:

============== ========================= ======================================================
column         type                      verl / TRL name
============== ========================= ======================================================
id             string                    (row key)
group_id       string                    verl ``uid`` (GRPO grouping); TRL groups by prompt
task_id        string                    the prompt's id
sample_index   int32                     member of the group
prompt_ids     list<int32>               verl ``prompts``; TRL ``prompt_ids``
response_ids   list<int32>               verl ``responses``; TRL ``completion_ids``
response_mask  list<int8>                verl ``response_mask``; TRL ``completion_mask``
                                         (1 on policy-sampled tokens, 0 on template/tool tokens)
logprobs       list<float32> (nullable)  verl ``old_log_probs``; TRL ``old_per_token_logps``
                                         (null on tokens the policy did not sample)
reward         float64 (nullable)        verl ``token_level_scores`` summed; TRL ``rewards``
advantage      float64 (nullable)        the trajectory's scalar advantage
advantages     list<float32>             verl / TRL ``advantages``: the scalar broadcast on
                                         sampled tokens, 0 elsewhere; with per-step GRPO each
                                         turn's advantage on that turn's sampled tokens (0
                                         where the step is masked); with a teacher,
                                         ``reward_weight`` × that + ``distill_weight`` ×
                                         ``distill_advantages``
teacher_logprobs list<float32> (nullable) the teacher's logprob of each sampled token (on-policy
                                         distillation; empty without a teacher)
distill_advantages list<float32>         per-token reverse-KL advantage ``teacher_logprob −
                                         logprob`` = −(log π_student − log π_teacher): > 0 where
                                         the teacher likes the token more (pushes the student
                                         toward the teacher); 0 where either is missing; empty
                                         without a teacher
stop_reason    string                    stop | length | max_turns | ... (DESIGN.md §2)
turns          int32                     policy turns taken
messages       string (JSON)             the OpenAI-format conversation
weight_version string (nullable)         policy weights that sampled it (trainers drop stale rows)
============== ========================= ======================================================

``input_ids`` is ``prompt_ids + response_ids``; labels are ``input_ids`` with
-100 wherever ``response_mask`` is 0 (and on the whole prompt).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from shared.advantages import distillation_advantages, token_advantages
from shared.iterutil import batched
from shared.jsonl import dumps_line
from shared.schema import Trajectory

__all__ = [
    "EXPORT_FORMATS",
    "DistillWeights",
    "PARQUET_SCHEMA",
    "ExportFormat",
    "ExportItem",
    "ParquetSink",
    "jsonl_row",
    "parquet_row",
    "write_jsonl",
    "write_parquet",
]

ExportFormat = Literal["parquet", "jsonl"]
EXPORT_FORMATS: tuple[str, ...] = ("parquet", "jsonl")

PARQUET_SCHEMA = pa.schema([
    ("id", pa.string()),
    ("group_id", pa.string()),
    ("task_id", pa.string()),
    ("sample_index", pa.int32()),
    ("prompt_ids", pa.list_(pa.int32())),
    ("response_ids", pa.list_(pa.int32())),
    ("response_mask", pa.list_(pa.int8())),
    ("logprobs", pa.list_(pa.float32())),
    ("reward", pa.float64()),
    ("advantage", pa.float64()),
    ("advantages", pa.list_(pa.float32())),
    ("teacher_logprobs", pa.list_(pa.float32())),
    ("distill_advantages", pa.list_(pa.float32())),
    ("stop_reason", pa.string()),
    ("turns", pa.int32()),
    ("messages", pa.string()),
    ("weight_version", pa.string()),
])


@dataclass(frozen=True, slots=True)
class DistillWeights:
    """How a distillation job weighs its two advantages per token (its teacher spec's weights)."""

    reward_weight: float = 1.0
    distill_weight: float = 1.0


@dataclass(slots=True)
class ExportItem:
    """One trajectory ready for export; ``distill`` is set when its job had a teacher."""

    trajectory: Trajectory
    task_id: str | None = None
    reward: float | None = None
    advantage: float | None = None
    distill: DistillWeights | None = None


def _turn_advantages(traj: Trajectory, mask: list[int]) -> list[float] | None:
    """Per-step advantages spread on each turn's sampled tokens, or None when the trajectory has none.

    Sampled tokens are taken in order: the first ``steps[0].completion_tokens``
    belong to turn 0, and so on; any left over (a turn without a count) take the
    last turn's value.
    """
    step_adv = traj.metadata.get("step_advantages")
    if not isinstance(step_adv, list) or len(step_adv) != len(traj.steps) or not step_adv:
        return None
    keep = traj.metadata.get("step_advantage_mask") or [1] * len(step_adv)
    values = [float(a) if k else 0.0 for a, k in zip(step_adv, keep, strict=True)]
    quota = [int(s.completion_tokens or 0) for s in traj.steps]
    out, turn, used = [], 0, 0
    for m in mask:
        if not m:
            out.append(0.0)
            continue
        while turn < len(quota) - 1 and used >= quota[turn]:
            turn, used = turn + 1, 0
        out.append(values[turn])
        used += 1
    return out


def _token_columns(traj: Trajectory, advantage: float, distill: DistillWeights | None) -> dict[str, list[Any]]:
    tokens = traj.tokens
    if tokens is None:  # message-mode rollouts carry no token data
        return {"prompt_ids": [], "response_ids": [], "response_mask": [], "logprobs": [], "advantages": [],
                "teacher_logprobs": [], "distill_advantages": []}
    n = len(tokens.response_ids)
    # A missing loss mask means every response token was sampled (single-turn engines omit it).
    mask = list(tokens.loss_mask) if tokens.loss_mask else [1] * n
    logprobs = [lp if m else None for lp, m in zip(tokens.logprobs or [None] * n, mask, strict=True)]
    reward_adv = _turn_advantages(traj, mask) or [advantage if m else 0.0 for m in mask]
    teacher = ([lp if m else None for lp, m in zip(tokens.teacher_logprobs, mask, strict=True)]
               if tokens.teacher_logprobs else [])
    distilled = distillation_advantages(logprobs, teacher, mask) if distill is not None and teacher else None
    # In a distillation job every member is weighed alike; one the teacher could not score adds no distillation.
    combined = token_advantages(reward_adv, distilled or [0.0] * n, reward_weight=distill.reward_weight,
                                distill_weight=distill.distill_weight) if distill is not None else reward_adv
    return {
        "prompt_ids": list(tokens.prompt_ids),
        "response_ids": list(tokens.response_ids),
        "response_mask": mask,
        "logprobs": logprobs,
        "advantages": combined,
        "teacher_logprobs": teacher,
        "distill_advantages": distilled or [],
    }


def parquet_row(item: ExportItem) -> dict[str, Any]:
    """The Parquet row of one trajectory (token columns aligned to ``response_ids``)."""
    traj = item.trajectory
    messages = [m.to_openai() for m in traj.messages]
    return {
        "id": traj.id, "group_id": traj.group_id, "task_id": item.task_id, "sample_index": traj.sample_index,
        **_token_columns(traj, item.advantage or 0.0, item.distill),
        "reward": item.reward, "advantage": item.advantage, "stop_reason": traj.stop_reason,
        "turns": traj.turns, "messages": json.dumps(messages, ensure_ascii=False),
        "weight_version": traj.tokens.weight_version if traj.tokens is not None else None,
    }


def jsonl_row(item: ExportItem) -> dict[str, Any]:
    """The JSONL row of one trajectory: ``Trajectory.to_row()`` plus task id, reward and advantage.

    With a teacher it also carries the per-token ``distill_advantages`` and combined ``advantages``
    (the Parquet columns of the same names).
    """
    row = {**item.trajectory.to_row(), "task_id": item.task_id, "reward": item.reward, "advantage": item.advantage}
    if item.distill is not None and item.trajectory.tokens is not None:
        columns = _token_columns(item.trajectory, item.advantage or 0.0, item.distill)
        row.update(distill_advantages=columns["distill_advantages"], advantages=columns["advantages"])
    return row


class ParquetSink:
    """A Parquet file written one record batch at a time."""

    def __init__(self, where: str | IO[bytes]) -> None:
        self._writer = pq.ParquetWriter(where, PARQUET_SCHEMA, compression="zstd")
        self.rows = 0

    def write(self, items: list[ExportItem]) -> None:
        """Append one batch of trajectories as a row group."""
        if items:
            self._writer.write_batch(pa.RecordBatch.from_pylist([parquet_row(i) for i in items],
                                                                schema=PARQUET_SCHEMA))
            self.rows += len(items)

    def close(self) -> None:
        """Finish the file (an empty export is still a valid file with the schema)."""
        self._writer.close()


def write_parquet(items: Iterable[ExportItem], where: str | IO[bytes], *, batch_rows: int = 256) -> int:
    """Write items as token-level Parquet in row groups of ``batch_rows``; returns rows written."""
    sink = ParquetSink(where)
    try:
        for batch in batched(items, batch_rows):
            sink.write(batch)
    finally:
        sink.close()
    return sink.rows


def write_jsonl(items: Iterable[ExportItem], out: IO[bytes]) -> int:
    """Write items as JSONL (one trajectory per line); returns rows written."""
    count = 0
    for item in items:
        out.write(dumps_line(jsonl_row(item)))
        count += 1
    return count

