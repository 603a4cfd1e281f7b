"""APIMultiTurnRollout (message level). The API is a scripted policy (fixed replies,
tokenised by the real SmolLM2 tokenizer); tools are a real Python function registry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from services.rollout.api_rollout import APIMultiTurnRollout
from shared.errors import InvalidInput
from tests.services.rollout.support import (
    FunctionTools,
    ScriptedPolicy,
    hermes_parser,
    tool_call_text,
)


def script(user: str, turn: int) -> str:
    if user == "loop":
        return tool_call_text("count")
    return tool_call_text("count") if turn == 0 else "counted"


def counter() -> FunctionTools:
    state = {"n": 0}

    def count() -> int:
        state["n"] += 1
        return state["n"]

    return FunctionTools(count=count)


async def test_each_trajectory_uses_its_own_tool_manager(smol_tokenizer: Any) -> None:
    managers = [counter(), counter()]
    api = APIMultiTurnRollout(ScriptedPolicy(smol_tokenizer, script), managers, max_turns=4,
                              parser=hermes_parser)
    trajs = await api.run([{"id": "a", "messages": [{"role": "user", "content": "loop"}]},
                           {"id": "b", "messages": [{"role": "user", "content": "once"}]}])
    assert [t.stop_reason for t in trajs] == ["max_turns", "stop"]
    assert [m.text() for m in trajs[0].messages if m.role == "tool"] == ["1", "2", "3"]
    assert [m.text() for m in trajs[1].messages if m.role == "tool"] == ["1"]


async def test_api_error_is_recorded_not_raised(smol_tokenizer: Any) -> None:
    policy = ScriptedPolicy(smol_tokenizer, script, fail_calls={0, 1, 2})
    api = APIMultiTurnRollout(policy, counter(), parser=hermes_parser)
    [traj] = await api.run([{"id": "a", "messages": [{"role": "user", "content": "once"}]}])
    assert traj.stop_reason == "api_error" and traj.truncated
    assert "scripted upstream is down" in traj.metadata["error"]


async def test_traces_are_written_per_member_with_ok_or_fail(smol_tokenizer: Any, tmp_path: Path) -> None:
    api = APIMultiTurnRollout(ScriptedPolicy(smol_tokenizer, script), counter(), max_turns=2,
                              trace_dir=tmp_path, parser=hermes_parser)
    prompts = [{"id": "a/1", "messages": [{"role": "user", "content": "loop"}]},
               {"id": "b", "messages": [{"role": "user", "content": "once"}]}]
    await api.run(prompts, global_step=7)
    await api.run(prompts, global_step=7)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["000007-fail-a_1-0-dup1.json", "000007-fail-a_1-0.json",
                     "000007-ok-b-0-dup1.json", "000007-ok-b-0.json"]
    record = json.loads((tmp_path / "000007-ok-b-0.json").read_text())
    assert record["stop_reason"] == "stop" and record["success"] is True and record["turns"] == 2


async def test_list_of_managers_must_match_the_trajectories(smol_tokenizer: Any) -> None:
    api = APIMultiTurnRollout(ScriptedPolicy(smol_tokenizer, script), [counter()])
    with pytest.raises(InvalidInput):
        await api.run([{"id": "a", "messages": [{"role": "user", "content": "x"}]}] * 2)
