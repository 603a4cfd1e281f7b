"""The main job's first step: sample public tool-use rows, store them, clean them, pick rollout tasks."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from shared.client import Client
from shared.data import load_rows
from shared.jsonl import dumps_line
from shared.rollout_spec_file import task_from_row

__all__ = ["CALL_EXAMPLE", "DEMO_FILES", "CleanSummary", "clean_sample", "pick_tasks", "with_call_example"]

#: Recorded tool-use conversations: each kept row's first assistant reply is the reference for its prompt.
DEMO_FILES: tuple[str, ...] = ("glaive_toolcall_en_llamafactory.jsonl", "reason_tool_use_llamafactory.jsonl",
                               "toolbench_dfsdt_examples.jsonl")


#: A one-shot exchange shown before the task's request: the call format on a tool the task does not offer.
#: A 135M model rarely writes a ``<tool_call>`` block from the schema text alone; with one example it
#: sometimes does, so a group earns a spread of graded rewards (decision, tool name, arguments).
CALL_EXAMPLE: tuple[dict[str, str], ...] = (
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant",
     "content": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'},
    {"role": "tool", "content": '{"city": "Paris", "weather": "sunny", "temperature_c": 21}'},
    {"role": "assistant", "content": "It is sunny in Paris, 21 °C."},
)


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


def with_call_example(task: dict[str, Any]) -> dict[str, Any]:
    """``task`` with :data:`CALL_EXAMPLE` inserted before its first user message (after any system prompt)."""
    messages = list(task["messages"])
    at = next(i for i, m in enumerate(messages) if m.get("role") == "user")
    return {**task, "messages": [*messages[:at], *(dict(m) for m in CALL_EXAMPLE), *messages[at:]]}


def pick_tasks(kept: list[dict[str, Any]], count: int, *, call_example: bool = True) -> list[dict[str, Any]]:
    """The ``count`` shortest kept rows that have tools and a gold call, as rollout tasks (short = fast on CPU).

    With ``call_example`` each prompt opens with the one-shot call format (:data:`CALL_EXAMPLE`).
    """
    tasks = [t for t in (task_from_row(row, i) for i, row in enumerate(kept)) if _usable(t)]
    unique = {t["id"]: t for t in tasks}  # ids are unique per file; the first wins across files
    picked = sorted(unique.values(), key=_prompt_chars)[:count]
    return [with_call_example(t) for t in picked] if call_example else picked
