"""The main job's summary tables: cleaning outcomes, and per-group rewards, advantages and tokens from the export."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from rich.table import Table

from services.demo_clean import CleanSummary

__all__ = ["GroupStats", "clean_tables", "console_url", "group_stats", "groups_table", "reward_spread"]

#: Computes advantages for groups of rewards when the job stored none (the reward service's endpoint).
AdvantageFn = Callable[[list[list[float | None]]], list[list[float]]]


@dataclass
class GroupStats:
    """One group's members as exported: rewards, advantages and token counts."""

    task_id: str
    rewards: list[float | None] = field(default_factory=list)
    advantages: list[float | None] = field(default_factory=list)
    prompt_tokens: int = 0
    response_tokens: int = 0
    sampled_tokens: int = 0


def clean_tables(summary: CleanSummary) -> list[Table]:
    """Rows kept / dropped / invalid per file, and the drop reasons (step: reason)."""
    files = Table(title="cleaning (default pipeline)")
    for col in ("file", "rows", "kept", "dropped", "invalid"):
        files.add_column(col, justify="left" if col == "file" else "right")
    for name, counts in summary.per_file.items():
        files.add_row(name, *(str(counts[k]) for k in ("rows", "kept", "dropped", "invalid")))
    reasons = Table(title="dropped rows by reason")
    reasons.add_column("step: reason")
    reasons.add_column("rows", justify="right")
    for reason, n in summary.drop_reasons.most_common():
        reasons.add_row(reason, str(n))
    return [files, reasons]


def _add_row(groups: dict[str, GroupStats], row: dict[str, Any]) -> None:
    stats = groups.setdefault(str(row["task_id"] or row["group_id"]), GroupStats(str(row["task_id"])))
    stats.rewards.append(row["reward"])
    stats.advantages.append(row["advantage"])
    stats.prompt_tokens += len(row["prompt_ids"] or [])
    stats.response_tokens += len(row["response_ids"] or [])
    stats.sampled_tokens += sum(row["response_mask"] or [])


def group_stats(parquet: Path, compute_advantages: AdvantageFn) -> dict[str, GroupStats]:
    """Per-group stats read back from the Parquet export (advantages computed when none were stored)."""
    columns = ["task_id", "group_id", "reward", "advantage", "prompt_ids", "response_ids", "response_mask"]
    groups: dict[str, GroupStats] = {}
    for row in pq.read_table(parquet, columns=columns).to_pylist():
        _add_row(groups, row)
    missing = [g for g in groups.values() if all(a is None for a in g.advantages)]
    if missing:
        for stats, advantages in zip(missing, compute_advantages([g.rewards for g in missing]), strict=True):
            stats.advantages = list(advantages)
    return groups


def _fmt(values: list[float | None], fn: Callable[[list[float]], float]) -> str:
    present = [v for v in values if v is not None]
    return f"{fn(present):.3f}" if present else "-"


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def groups_table(groups: dict[str, GroupStats]) -> Table:
    """Reward mean/min/max, advantage range and token counts per group, with totals."""
    table = Table(title="groups: rewards, advantages, tokens")
    for col in ("task", "n", "reward mean", "min", "max", "adv min", "adv max", "prompt tok", "response tok",
                "sampled tok"):
        table.add_column(col, justify="left" if col == "task" else "right")
    for stats in groups.values():
        table.add_row(stats.task_id[-36:], str(len(stats.rewards)), _fmt(stats.rewards, _mean),
                      _fmt(stats.rewards, min), _fmt(stats.rewards, max), _fmt(stats.advantages, min),
                      _fmt(stats.advantages, max), str(stats.prompt_tokens), str(stats.response_tokens),
                      str(stats.sampled_tokens))
    totals = [sum(getattr(s, k) for s in groups.values()) for k in ("prompt_tokens", "response_tokens",
                                                                     "sampled_tokens")]
    all_rewards = [r for s in groups.values() for r in s.rewards]
    table.add_row("all", str(len(all_rewards)), _fmt(all_rewards, _mean), _fmt(all_rewards, min),
                  _fmt(all_rewards, max), "", "", *(str(t) for t in totals))
    return table


def reward_spread(groups: dict[str, GroupStats]) -> tuple[int, int]:
    """(groups whose scored rewards are not all equal, groups with at least two scored members).

    A group whose members all earn the same reward has zero advantage everywhere: no learning signal.
    """
    scored = [[r for r in g.rewards if r is not None] for g in groups.values()]
    eligible = [r for r in scored if len(r) >= 2]
    return sum(1 for r in eligible if max(r) - min(r) > 1e-9), len(eligible)


def console_url(base_url: str, job_id: str) -> str:
    """The console page of one rollout job."""
    return f"{base_url.rstrip('/')}/ui/rollouts/{job_id}"
