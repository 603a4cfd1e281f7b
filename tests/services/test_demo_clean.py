"""The main job's cleaning step on the embedded stack (SQLite, in-process): store, clean, pick tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

from services import demo
from services.demo_clean import CleanSummary, clean_sample, pick_tasks
from services.embedded import embedded_server
from shared.client import Client
from shared.settings import Settings
from tests.conftest import shared_data_dir

FILES = ("glaive_toolcall_en_llamafactory.jsonl", "toolbench_dfsdt_examples.jsonl")


def test_clean_sample_stores_rows_over_rest_and_counts_every_row(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, shared_data_dir=shared_data_dir(), log_level="WARNING")
    with embedded_server(settings) as server, Client(server.url, api_key=server.api_key) as client:
        summary = clean_sample(client, files=FILES, rows_per_file=20)
        # The report's fallback when a job stored no advantages: the reward service's GRPO over REST.
        advantages = demo._advantages(client, [[1.0, 0.0], [0.5, 0.5, 0.5]])
        assert advantages[0] == pytest.approx([1.0, -1.0]) and advantages[1] == [0.0, 0.0, 0.0]
    assert (tmp_path / "trajforge.db").exists() and server.key_path.exists()
    for name in FILES:
        counts = summary.per_file[name]
        assert counts["rows"] == counts["kept"] + counts["dropped"] + counts["invalid"] > 0
    assert sum(summary.drop_reasons.values()) == sum(c["dropped"] + c["invalid"] for c in summary.per_file.values())
    assert all(": " in reason for reason in summary.drop_reasons)  # "step: reason"
    tasks = pick_tasks(summary.kept, 3)
    assert len(tasks) == 3
    for task in tasks:
        assert [m["role"] for m in task["messages"]][-1] == "user" and task["tools"]
        assert task["ground_truth"]["decision"] == "tool_call" and task["ground_truth"]["tool_calls"][0]["name"]


def test_pick_tasks_prefers_short_prompts_and_skips_rows_without_a_gold_call() -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    long_row = {"id": "long", "tools": [tool], "messages": [{"role": "user", "content": "x" * 500},
                                                            {"role": "assistant", "tool_calls": [call]}]}
    short_row = {"id": "short", "tools": [tool], "messages": [{"role": "user", "content": "hi"},
                                                              {"role": "assistant", "tool_calls": [call]}]}
    text_reply = {"id": "text", "tools": [tool], "messages": [{"role": "user", "content": "yo"},
                                                              {"role": "assistant", "content": "hello"}]}
    no_tools = {"id": "plain", "messages": [{"role": "user", "content": "a"},
                                            {"role": "assistant", "tool_calls": [call]}]}
    picked = pick_tasks([long_row, text_reply, no_tools, short_row], 5)
    assert [t["id"] for t in picked] == ["short", "long"]
    assert picked[0]["ground_truth"] == {"decision": "tool_call", "tool_calls": [{"name": "f", "arguments": {}}]}
    assert CleanSummary().kept == []
