"""Fixtures for reward tests: the reference tool set (§e.1) and a trajectory builder."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from shared.schema import Trajectory


def _fn(name: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": props, "required": required}}}


REFERENCE_TOOLS = [
    _fn("get_weather", {"city": {"type": "string"},
                        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
                        "days": {"type": "integer", "default": 1}}, ["city"]),
    _fn("search_flights", {"origin": {"type": "string"}, "destination": {"type": "string"},
                           "date": {"type": "string"}, "passengers": {"type": "integer", "default": 1},
                           "max_price": {"type": "number"}}, ["origin", "destination", "date"]),
    _fn("set_reminder", {"text": {"type": "string"}, "time": {"type": "string"},
                         "tags": {"type": "array", "items": {"type": "string"}}}, ["text", "time"]),
    _fn("create_event", {"title": {"type": "string"}, "attendees": {"type": "array", "items": {"type": "string"}},
                         "all_day": {"type": "boolean", "default": False}}, ["title", "attendees"]),
    _fn("update_settings", {"settings": {"type": "object", "properties": {
        "theme": {"type": "string"}, "notifications": {"type": "boolean"}}}}, ["settings"]),
    _fn("list_devices", {}, []),
    _fn("weather_get", {"city": {"type": "string"}}, ["city"]),
    _fn("delete_file", {"path": {"type": "string"}}, ["path"]),
    _fn("transfer_funds", {"from_account": {"type": "string"}, "to_account": {"type": "string"},
                           "amount": {"type": "number"}}, ["from_account", "to_account", "amount"]),
]

Builder = Callable[..., Trajectory]


def build_traj(output: str | None = None, *, calls: list[tuple[str, Any]] | None = None,
               user: str = "please help", tools: list[dict[str, Any]] | None = None,
               history: list[dict[str, Any]] | None = None) -> Trajectory:
    """A trajectory whose final assistant turn is raw text and/or structured calls."""
    message: dict[str, Any] = {"role": "assistant", "content": output}
    if calls is not None:
        message["tool_calls"] = [
            {"id": f"c{i}", "type": "function", "function": {
                "name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
            for i, (name, args) in enumerate(calls)]
    messages = [*(history or []), {"role": "user", "content": user}, message]
    return Trajectory(messages=messages, tools=REFERENCE_TOOLS if tools is None else tools)


@pytest.fixture
def make_traj() -> Builder:
    """The trajectory builder."""
    return build_traj


WEATHER_TRUTH = {"decision": "tool_call", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}


def stored_rows(job_id: Any, group_id: Any, meta_and_calls: list[tuple[dict[str, Any], list[tuple[str, Any]] | None]]
                ) -> list[Any]:
    """Trajectory rows of one group: each with its metadata and final tool calls (None: messages left empty)."""
    from shared.db.models import TrajectoryRow

    rows = []
    for i, (meta, calls) in enumerate(meta_and_calls):
        traj = build_traj(calls=calls) if calls is not None else None
        rows.append(TrajectoryRow(job_id=job_id, group_id=group_id, task_id="t0", sample_index=i,
                                  messages=[m.model_dump(mode="json", exclude_none=True) for m in traj.messages] if traj else [],
                                  tools=[t.model_dump(mode="json", exclude_none=True) for t in traj.tools] if traj else [],
                                  meta=meta))
    return rows


async def store_rollout(session: Any, meta_and_calls: list[tuple[dict[str, Any], list[tuple[str, Any]] | None]]) -> Any:
    """A rollout job with one group of stored trajectories (flushed, not committed); returns the job id."""
    from shared.db.models import RolloutJobRow, TrajectoryGroupRow

    job = RolloutJobRow(status="finished")
    session.add(job)
    await session.flush()
    group = TrajectoryGroupRow(job_id=job.id, task_id="t0")
    session.add(group)
    await session.flush()
    session.add_all(stored_rows(job.id, group.id, meta_and_calls))
    await session.flush()
    return job.id
