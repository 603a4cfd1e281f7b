"""The main job's first step: sample public tool-use rows, store them, clean them, pick rollout tasks."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from services.rollout.spec_file import task_from_row
from shared.client import Client
from shared.data import load_rows
from shared.jsonl import dumps_line

__all__ = ["DEMO_FILES", "CleanSummary", "clean_sample", "pick_tasks"]

#: Recorded tool-use conversations: each kept row's first assistant reply is the reference for its prompt.
DEMO_FILES: tuple[str, ...] = ("glaive_toolcall_en_llamafactory.jsonl", "reason_tool_use_llamafactory.jsonl",
                               "toolbench_dfsdt_examples.jsonl")


@dataclass
class CleanSummary:
    """Rows in, kept, dropped (by step and reason) and invalid, per file and overall."""

    per_file: dict[str, dict[str, int]] = field(default_factory=dict)
    drop_reasons: Counter[str] = field(default_factory=Counter)
    kept: list[dict[str, Any]] = field(default_factory=list)


def _clean_file(client: Client, name: str, rows: list[dict[str, Any]], summary: CleanSummary) -> None:
    result = client.clean(rows)  # POST /v1/clean with the default pipeline
    counts = result["counts"]
    summary.per_file[name] = {"rows": counts["total"], "kept": counts["kept"], "dropped": counts["dropped"],
                              "invalid": counts["invalid"]}
    summary.drop_reasons.update(f"{d['step']}: {d['reason']}" for d in result["dropped"])
    summary.drop_reasons.update(f"invalid: {d.get('detail')}" for d in result["invalid"])
    summary.kept.extend(result["kept"])


def clean_sample(client: Client, *, files: tuple[str, ...], rows_per_file: int) -> CleanSummary:
    """Upload each file's sample (system of record), then clean it with the default pipeline, both over REST."""
    summary = CleanSummary()
    for name in files:
        rows = load_rows(name, rows_per_file)
        client.upload_dataset(name.removesuffix(".jsonl"), b"".join(dumps_line(r) for r in rows))
        _clean_file(client, name, rows, summary)
    return summary


def _prompt_chars(task: dict[str, Any]) -> int:
    return sum(len(str(m.get("content") or "")) for m in task["messages"]) + len(str(task["tools"]))


def _usable(task: dict[str, Any]) -> bool:
    truth = task.get("ground_truth") or {}
    has_user = any(m.get("role") == "user" for m in task["messages"])
    return has_user and bool(task["tools"]) and truth.get("decision") == "tool_call" and bool(truth.get("tool_calls"))


def pick_tasks(kept: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """The ``count`` shortest kept rows that have tools and a gold call, as rollout tasks (short = fast on CPU)."""
    tasks = [t for t in (task_from_row(row, i) for i, row in enumerate(kept)) if _usable(t)]
    unique = {t["id"]: t for t in tasks}  # ids are unique per file; the first wins across files
    return sorted(unique.values(), key=_prompt_chars)[:count]
