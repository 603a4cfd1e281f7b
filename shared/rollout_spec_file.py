"""Rollout job specs from YAML files: the ``POST /v1/rollouts`` body, with tasks inline or from JSONL.

A spec file holds the job body of the REST contract. Instead of ``tasks`` it
may name ``tasks_file`` (JSONL, relative to the spec file) and an optional
``limit``; each row then becomes a task whose prompt is every message before
the first assistant turn (the rest of the row is the recorded answer, not
prompt). Validation here catches what a user gets wrong most often, with the
file and task named; the server validates the rest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from shared.errors import InvalidInput
from shared.jsonl import iter_jsonl_path
from shared.schema import Message

__all__ = ["RolloutSpecError", "load_spec_file", "task_from_row", "validate_job_body"]

_MAX_TASKS = 10_000


class RolloutSpecError(InvalidInput):
    """A rollout spec file that cannot be submitted; the message says what to fix."""

    code = "invalid_rollout_spec"


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _recorded_truth(reply: dict[str, Any]) -> dict[str, Any]:
    # The recorded reply is the reference: its tool calls, or a text answer (no call).
    calls = [c.get("function") or {} for c in reply.get("tool_calls") or [] if isinstance(c, dict)]
    if not calls:
        return {"decision": "no_tool_call", "tool_calls": []}
    return {"decision": "tool_call",
            "tool_calls": [{"name": c.get("name"), "arguments": _arguments(c.get("arguments") or {})} for c in calls]}


def task_from_row(row: dict[str, Any], index: int) -> dict[str, Any]:
    """A rollout task from a trajectory row: the prompt before the first assistant turn, tools, ground truth.

    A row without ``ground_truth`` is graded against its own first assistant reply.
    """
    messages = row.get("messages")
    if not isinstance(messages, list):
        raise RolloutSpecError(f"row {index} has no 'messages' list")
    prompt, reply = [], None
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "assistant":
            reply = message
            break
        prompt.append(message)
    task: dict[str, Any] = {"id": str(row.get("id") or f"task-{index}"), "messages": prompt,
                            "tools": row.get("tools") or [], "metadata": row.get("metadata") or {}}
    if row.get("ground_truth") is not None:
        task["ground_truth"] = row["ground_truth"]
    elif reply is not None:
        task["ground_truth"] = _recorded_truth(reply)
    return task


def _read_tasks_file(path: Path, limit: int | None) -> list[dict[str, Any]]:
    if not path.is_file():
        raise RolloutSpecError(f"tasks_file {path} does not exist")
    tasks: list[dict[str, Any]] = []
    for record in iter_jsonl_path(path):
        if limit is not None and len(tasks) >= limit:
            break
        if not record.ok or not isinstance(record.value, dict):
            raise RolloutSpecError(f"{path} line {record.line_no}: {record.error or 'not a JSON object'}")
        tasks.append(task_from_row(record.value, record.line_no))
    return tasks


def _check_task(task: Any, index: int) -> None:
    if not isinstance(task, dict):
        raise RolloutSpecError(f"task {index} is not a mapping")
    name = task.get("id", index)
    try:
        messages = [Message.model_validate(m) for m in task.get("messages") or []]
    except ValidationError as exc:
        raise RolloutSpecError(f"task {name!r}: bad message: {exc.errors()[0]['msg']}") from None
    if not any(m.role == "user" for m in messages):
        raise RolloutSpecError(f"task {name!r} has no user turn; every task needs one")


def _check_int(body: dict[str, Any], key: str, low: int, high: int) -> None:
    value = body.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high):
        raise RolloutSpecError(f"{key} must be an integer from {low} to {high}, got {value!r}")


def validate_job_body(body: dict[str, Any]) -> dict[str, Any]:
    """Check a job body's tasks, group size and budgets; returns it unchanged."""
    tasks = body.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise RolloutSpecError("the spec needs 'tasks' (a non-empty list) or 'tasks_file'")
    if len(tasks) > _MAX_TASKS:
        raise RolloutSpecError(f"{len(tasks)} tasks; a job takes at most {_MAX_TASKS}")
    for index, task in enumerate(tasks):
        _check_task(task, index)
    _check_int(body, "group_size", 1, 64)
    if "group_size" not in body:
        raise RolloutSpecError("the spec needs 'group_size' (1 to 64)")
    limits = body.get("limits") or {}
    if not isinstance(limits, dict):
        raise RolloutSpecError("'limits' must be a mapping")
    for key in ("max_turns", "max_tokens_per_turn", "max_total_tokens"):
        _check_int(limits, key, 1, 10_000_000)
    return body


def load_spec_file(path: Path) -> dict[str, Any]:
    """The job body a spec YAML describes, with ``tasks_file`` read into ``tasks``."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise RolloutSpecError(f"cannot read {path}: {exc}") from None
    if not isinstance(raw, dict):
        raise RolloutSpecError(f"{path} must hold a mapping (the rollout job body)")
    body = dict(raw)
    tasks_file, limit = body.pop("tasks_file", None), body.pop("limit", None)
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise RolloutSpecError(f"limit must be a positive integer, got {limit!r}")
    if tasks_file is not None:
        if "tasks" in body:
            raise RolloutSpecError("give either 'tasks' or 'tasks_file', not both")
        body["tasks"] = _read_tasks_file(path.parent / str(tasks_file), limit)
    elif limit is not None and isinstance(body.get("tasks"), list):
        body["tasks"] = body["tasks"][:limit]
    return validate_job_body(body)
