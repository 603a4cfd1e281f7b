"""A round's batch from the job's token-level Parquet export: rows to train on, and stale ones flagged."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

import pyarrow.parquet as pq

from services.inference.train.policy import TrainRow

__all__ = ["RoundBatch", "read_export"]

_COLUMNS = ["group_id", "prompt_ids", "response_ids", "response_mask", "logprobs", "advantage", "advantages",
            "reward", "weight_version"]


@dataclass
class RoundBatch:
    """One round's trajectories: those to train on, their rewards, and what was left out and why."""

    rows: list[TrainRow] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    group_rewards: dict[str, list[float]] = field(default_factory=dict)
    versions: list[str | None] = field(default_factory=list)
    stale: int = 0
    no_signal: int = 0
    sampled_tokens: int = 0


def _version(raw: Any) -> int | None:
    try:
        return int(raw) if raw is not None else None
    except (TypeError, ValueError):
        return None


def _is_stale(version: int | None, current: int | None, max_staleness: int) -> bool:
    return current is not None and version is not None and current - version > max_staleness


def read_export(data: bytes, *, groups: set[str] | None, current_version: int | None,
                max_staleness: int) -> RoundBatch:
    """Rows of the export (only ``groups`` when given); stale rows are counted and dropped.

    Rows with advantage 0 everywhere (a group whose members all tied) carry no policy gradient and
    are counted as ``no_signal``; their rewards still count towards the round's mean.
    """
    table = pq.read_table(io.BytesIO(data))
    present = [c for c in _COLUMNS if c in table.column_names]
    batch = RoundBatch()
    for row in table.select(present).to_pylist():
        if groups is not None and row["group_id"] not in groups:
            continue
        version = row.get("weight_version")
        batch.versions.append(version)
        if _is_stale(_version(version), current_version, max_staleness):
            batch.stale += 1
            continue
        if row["reward"] is not None:
            batch.rewards.append(float(row["reward"]))
            batch.group_rewards.setdefault(str(row["group_id"]), []).append(float(row["reward"]))
        batch.sampled_tokens += sum(row["response_mask"] or [])
        if not row["advantage"] or not row["response_ids"]:
            batch.no_signal += 1
            continue
        batch.rows.append(TrainRow(prompt_ids=row["prompt_ids"], response_ids=row["response_ids"],
                                   response_mask=row["response_mask"], logprobs=row["logprobs"],
                                   advantages=row["advantages"]))
    return batch
