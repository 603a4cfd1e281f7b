from __future__ import annotations

import json

import pytest

from services.envs.counter_env import CounterEnv
from services.envs.routing_env import ToolRoutingEnv
from services.envs.wire import (
    ActionError,
    ToolValidators,
    WSErrorCode,
    action_to_call,
    error_frame,
    observation_frame,
    parse_result,
)
from shared.schema import StepResult


def test_action_forms() -> None:
    assert action_to_call(CounterEnv(), {"delta": 2, "metadata": {"x": 1}}) == ("add", {"delta": 2})
    assert action_to_call(
        ToolRoutingEnv(), {"tool_name": "respond", "arguments": {"content": "hi"}}
    ) == ("respond", {"content": "hi"})
    with pytest.raises(ActionError) as info:
        action_to_call(ToolRoutingEnv(), {"item_id": "A1"})
    assert info.value.errors[0]["loc"] == ["tool_name"]
    with pytest.raises(ActionError):
        action_to_call(CounterEnv(), {"tool_name": "add", "bogus": 1})


def test_tool_validators_use_env_schemas() -> None:
    v = ToolValidators(CounterEnv())
    v.check("add", {"delta": 1})
    v.check("unknown", {"anything": True})
    with pytest.raises(ActionError) as info:
        v.check("add", {"delta": "x"})
    assert info.value.errors[0]["type"] == "type"


def test_frames_round_trip() -> None:
    frame = json.loads(
        observation_frame(StepResult(observation="hi", reward=1.5, done=True, info={"k": 1}))
    )
    assert frame == {
        "type": "observation",
        "data": {"observation": {"text": "hi"}, "reward": 1.5, "done": True, "info": {"k": 1}},
    }
    assert parse_result(frame["data"]) == StepResult(
        observation={"text": "hi"}, reward=1.5, done=True, info={"k": 1}
    )
    assert parse_result({"observation": {}, "reward": None}).reward == 0.0
    err = json.loads(error_frame(WSErrorCode.CAPACITY_REACHED, "full", max_sessions=2))
    assert err == {
        "type": "error",
        "data": {"message": "full", "code": "CAPACITY_REACHED", "max_sessions": 2},
    }
