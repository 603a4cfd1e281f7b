"""Agent, train-mode and data-manager registries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.rollout.agents import (
    AGENTS_MAPPING,
    ChatAgent,
    ListTasks,
    Registry,
    agent_config,
    get_agent_by_name,
)
from services.rollout.data_registry import registry as data_managers
from services.rollout.train_register import registry as train_methods
from shared.errors import InvalidInput, NotFound


def test_agents_by_name() -> None:
    entry = get_agent_by_name("chat")
    assert entry is not None and entry["agent_class"] is ChatAgent and entry in AGENTS_MAPPING
    assert get_agent_by_name("nope") is None
    with pytest.raises(NotFound, match="known agents: chat"):
        agent_config("nope")


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


def test_train_methods_are_keyed_by_engine_and_cluster_mode() -> None:
    assert train_methods.keys() == [("verl", "hybrid"), ("verl", "one_step_off")]
    assert train_methods.get_method("verl", "fully_async") is None


def test_jsonl_data_manager_skips_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "a", "messages": [{"role": "user", "content": "q"}]}) + "\n{oops\n")
    infer = data_managers.get_class("verl", "infer")
    assert infer is not None
    tasks = infer(path)
    assert [t.id for t in tasks] == ["a"] and len(tasks.errors) == 1
    assert [t.id for t in ListTasks([{"id": "x"}])] == ["x"]
