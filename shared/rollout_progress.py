"""Follow a rollout job from the terminal: a live progress bar from its SSE events, summary tables, exports.

The client side of a rollout job (``trajforge rollout``, the demo): it reaches the job through
``shared.client.Client`` only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from shared.client import Client

__all__ = ["FINAL_STATUSES", "JobOutcome", "follow_job", "group_rewards_table", "job_summary_table", "stop_reasons",
           "write_exports"]

FINAL_STATUSES = frozenset({"succeeded", "failed", "cancelled"})
_STOP_PREFIX = "stop_reason:"


@dataclass
class JobOutcome:
    """What following a job saw: its final state and each group's rewards (by task id)."""

    job: dict[str, Any]
    group_rewards: dict[str, list[float | None]] = field(default_factory=dict)


def stop_reasons(counts: dict[str, Any]) -> dict[str, int]:
    """The ``stop_reason:<r>`` entries of a job's counts, by reason."""
    return {k.removeprefix(_STOP_PREFIX): int(v) for k, v in sorted(counts.items()) if k.startswith(_STOP_PREFIX)}


def _reasons_text(counts: dict[str, Any]) -> str:
    return " ".join(f"{reason}={n}" for reason, n in stop_reasons(counts).items())


def _apply(progress: Progress, bar: TaskID, outcome: JobOutcome, event: Any) -> None:
    data = event.data if isinstance(event.data, dict) else {}
    if event.event == "progress":
        progress.update(bar, completed=data.get("done_groups", 0), total=data.get("total_groups") or None,
                        reasons=_reasons_text(data.get("counts") or {}))
    elif event.event == "group":
        outcome.group_rewards[str(data.get("task_id"))] = list(data.get("rewards") or [])


def _poll_until_done(client: Client, job_id: str, progress: Progress, bar: TaskID, interval_s: float) -> None:
    # The event stream is a convenience; if it drops, the job's own status is the truth.
    while True:
        job = client.rollout(job_id)
        progress.update(bar, completed=job.get("done_groups", 0), reasons=_reasons_text(job.get("counts") or {}))
        if job.get("status") in FINAL_STATUSES:
            return
        time.sleep(interval_s)


def follow_job(client: Client, job: dict[str, Any], *, console: Console, poll_interval_s: float = 1.0) -> JobOutcome:
    """Show a progress bar (groups done / total, counts per stop reason) until the job ends."""
    outcome = JobOutcome(job=job)
    columns = (TextColumn("rollout"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[reasons]}"))
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task("groups", total=job.get("total_groups") or None, reasons="")
        try:
            for event in client.iter_rollout_events(str(job["id"])):
                _apply(progress, bar, outcome, event)
        except httpx.TransportError:
            pass
        _poll_until_done(client, str(job["id"]), progress, bar, poll_interval_s)
    outcome.job = client.rollout(str(job["id"]))
    return outcome


def job_summary_table(job: dict[str, Any]) -> Table:
    """Status, groups, trajectories and counts per stop reason of a finished job."""
    counts = job.get("counts") or {}
    table = Table(title=f"rollout {str(job.get('id', ''))[:8]}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("status", str(job.get("status")))
    table.add_row("groups done", f"{job.get('done_groups', 0)} / {job.get('total_groups', 0)}")
    table.add_row("trajectories", str(counts.get("trajectories", 0)))
    table.add_row("failed", str(counts.get("failed", 0)))
    for reason, n in stop_reasons(counts).items():
        table.add_row(f"stop: {reason}", str(n))
    return table


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def group_rewards_table(group_rewards: dict[str, list[float | None]]) -> Table:
    """Reward mean / min / max per group (unscored members counted apart)."""
    table = Table(title="rewards per group")
    for col in ("task", "members", "scored", "mean", "min", "max"):
        table.add_column(col, justify="left" if col == "task" else "right")
    for task_id, rewards in group_rewards.items():
        scored = [r for r in rewards if r is not None]
        mean = sum(scored) / len(scored) if scored else None
        table.add_row(task_id[:40], str(len(rewards)), str(len(scored)), _fmt(mean),
                      _fmt(min(scored) if scored else None), _fmt(max(scored) if scored else None))
    return table


def write_exports(client: Client, job_id: str, *, parquet: Path | None, jsonl: Path | None) -> list[Path]:
    """Download the job's exports to the given paths; returns the paths written."""
    written = []
    for fmt, path in (("parquet", parquet), ("jsonl", jsonl)):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(client.export_rollout(job_id, format=fmt))
            written.append(path)
    return written
