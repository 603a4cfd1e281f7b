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
