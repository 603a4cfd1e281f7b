"""Agent, train-mode and data-manager registries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.rollout.agents import (
    AGENTS_MAPPING,
    ChatAgent,
    DataManagerRegistry,
    Registry,
    TrainRegistry,
    get_agent_by_name,
)
from shared.errors import InvalidInput, NotFound


def test_agents_by_name() -> None:
    assert get_agent_by_name("chat") is ChatAgent and AGENTS_MAPPING["chat"] is ChatAgent
    with pytest.raises(NotFound, match="known agents: chat"):
        get_agent_by_name("nope")


def test_registry_refuses_duplicates_and_lists_names() -> None:
    reg: Registry[int] = Registry("thing")

    @reg.register("b")
    def _b() -> int:
        return 2

    reg.register("a", 1)  # type: ignore[arg-type]
    assert reg.names() == ["a", "b"] and reg.get("a") == 1
    with pytest.raises(InvalidInput):
        reg.register("a", 3)  # type: ignore[arg-type]
    with pytest.raises(NotFound):
        reg.get("c")


def test_train_modes_declare_their_staleness() -> None:
    assert TrainRegistry.names() == ["fully_async", "hybrid", "one_step_off"]
    assert TrainRegistry.get("one_step_off").max_staleness_steps == 1


def test_jsonl_data_manager_skips_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "a", "messages": [{"role": "user", "content": "q"}]}) + "\n{oops\n")
    tasks = DataManagerRegistry.get("jsonl")(path)
    assert [t.id for t in tasks] == ["a"] and len(tasks.errors) == 1
    assert [t.id for t in DataManagerRegistry.get("list")([{"id": "x"}])] == ["x"]
