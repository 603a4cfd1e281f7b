from __future__ import annotations

import pytest

from services.envs.counter_env import CounterEnv
from services.envs.errors import EnvNotFound
from services.envs.registry import EnvRegistry


def test_register_get_list_with_kwargs() -> None:
    reg = EnvRegistry()
    reg.register("counter", CounterEnv, start=5)
    reg.register("alpha", CounterEnv)
    assert reg.names() == ["alpha", "counter"]
    env = reg.get("counter")
    assert isinstance(env, CounterEnv) and env.start == 5
    assert reg.get("counter", start=9).start == 9
    assert reg.get("counter") is not env


def test_unknown_name_lists_known_ones() -> None:
    reg = EnvRegistry()
    reg.register("counter", CounterEnv)
    with pytest.raises(EnvNotFound, match="Registered: counter"):
        reg.get("nope")
    assert EnvNotFound.status_code == 404
