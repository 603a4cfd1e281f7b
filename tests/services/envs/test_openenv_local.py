from __future__ import annotations

import pytest
from pydantic import BaseModel

from services.envs.counter_env import CounterEnv
from services.envs.openenv_local import load_class, normalise_result
from shared.errors import InvalidInput
from shared.schema import StepResult


class _Obs(BaseModel):
    value: int
    reward: float | None = None
    done: bool = False
    metadata: dict = {}


def test_load_class_forms() -> None:
    assert load_class("services.envs.counter_env:CounterEnv") is CounterEnv
    assert load_class("services.envs.counter_env.CounterEnv") is CounterEnv
    with pytest.raises(InvalidInput, match="cannot load"):
        load_class("services.envs.nowhere:Nope")


def test_normalise_keeps_reward_out_of_the_observation() -> None:
    r = normalise_result(_Obs(value=3, reward=0.5, done=True, metadata={"m": 1}))
    assert r == StepResult(observation={"value": 3}, reward=0.5, done=True, info={"m": 1})
    assert normalise_result({"observation": "x", "reward": None}).reward == 0.0
