"""Our OpenEnv client against our server on loopback: episodes, tools, reconnect, timeouts."""

from __future__ import annotations

import time
from typing import Any

import pytest
from pydantic import BaseModel

from services.envs.base import Env, EnvTool
from services.envs.counter_env import CounterEnv
from services.envs.errors import (
    EnvConnectionLost,
    EnvRemoteError,
    EnvTimeout,
    SessionCapacityReached,
)
from services.envs.openenv_client import OpenEnv, tool_call_action, ws_url
from services.envs.openenv_server import OpenEnvServer, ServerConfig
from services.envs.registry import EnvRegistry
from shared.schema import StepResult
from tests.services.envs.conftest import serve


class _Slow(Env):
    """Sleeps for ``seconds`` (runs in a worker thread on the server), then counts."""

    default_tool = "wait"

    def __init__(self) -> None:
        self.calls = 0

    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        time.sleep(float(arguments.get("seconds", 0)))
        self.calls += 1
        return StepResult(observation={"text": f"call {self.calls}", "calls": self.calls})


def test_ws_url_forms() -> None:
    assert ws_url("http://h:1/envs/x/") == "ws://h:1/envs/x/ws"
    assert ws_url("https://h/p") == "wss://h/p/ws"
    assert ws_url("h:2") == "ws://h:2/ws"


def test_remote_episode_exposed_as_tools(registry: EnvRegistry) -> None:
    schema = CounterEnv().tools()
    with serve(OpenEnvServer(registry)) as base:
        env = OpenEnv(
            base_url=f"{base}/envs/counter", tool_schema=schema, action_mapper=tool_call_action
        )
        with env:
            first = env.reset({"start": 10}, seed=4)
            assert first.observation == {"value": 10, "text": "seed=4"}
            add, echo = EnvTool.from_env(env)
            assert add("add", {"delta": 2}) == "ok" and echo("echo", {"text": "yo"}) == "yo"
            assert add("add", {"delta": 3}) == "ok"
            assert add.episode_reward == 5.0
            assert env.state()["value"] == 15 and env.state()["step_count"] == 3
            with pytest.raises(EnvRemoteError) as info:
                env.step("add", {"delta": "x"})
            assert info.value.details["code"] == "VALIDATION_ERROR"
            assert env.step("add", {"delta": 1}).reward == 1.0  # errors keep the episode


def test_timeout_discards_connection_so_no_stale_reply_is_read() -> None:
    reg = EnvRegistry()
    reg.register("slow", _Slow)
    with serve(OpenEnvServer(reg)) as base:
        env = OpenEnv(base_url=f"{base}/envs/slow", message_timeout_s=0.2)
        env.reset()
        with pytest.raises(EnvTimeout):
            env.step("wait", {"seconds": 0.6})
        assert env.channel.ws is None
        with pytest.raises(EnvConnectionLost, match="reset"):
            env.step("wait", {})
        time.sleep(0.6)  # the late reply is sent to the discarded socket, never to us
        env.reset()
        assert env.step("wait", {}).observation == {"text": "call 1", "calls": 1}
        assert env.channel.connects == 2
        env.close()


def test_reconnects_after_the_server_closed_the_socket(registry: EnvRegistry) -> None:
    with serve(OpenEnvServer(registry, ServerConfig(idle_timeout_s=0.2))) as base:
        env = OpenEnv(base_url=f"{base}/envs/counter")
        env.reset()
        time.sleep(0.8)  # reaped server-side
        with pytest.raises(EnvConnectionLost):
            env.step("add", {"delta": 1})
        assert env.reset().observation["value"] == 0
        assert env.step("add", {"delta": 2}).observation["value"] == 2
        assert env.reset().observation["value"] == 0  # a live connection is reused
        assert env.channel.connects == 2
        time.sleep(0.8)  # reaped again; reset notices the dead socket and reconnects itself
        assert env.reset().observation["value"] == 0 and env.channel.connects == 3
        env.close()


def test_connect_retries_then_fails_clearly() -> None:
    env = OpenEnv(base_url="http://127.0.0.1:9", max_reconnects=1, connect_timeout_s=0.5)
    with pytest.raises(EnvConnectionLost, match="Cannot connect"):
        env.reset()


def test_capacity_and_auth(registry: EnvRegistry) -> None:
    server = OpenEnvServer(registry, ServerConfig(max_sessions=1), verify_key=lambda k: k == "sk-1")
    with serve(server) as base:
        first = OpenEnv(base_url=f"{base}/envs/counter/k/sk-1")
        first.reset()
        second = OpenEnv(base_url=f"{base}/envs/counter", api_key="sk-1")
        with pytest.raises(SessionCapacityReached):
            second.reset()
        first.close()
        deadline = time.monotonic() + 5
        while server.table.active and time.monotonic() < deadline:
            time.sleep(0.02)
        assert second.reset().observation["value"] == 0
        second.close()
        with pytest.raises(EnvConnectionLost):
            OpenEnv(base_url=f"{base}/envs/counter", api_key="sk-bad", max_reconnects=0).reset()


class _Delta(BaseModel):
    delta: int


class _Obs(BaseModel):
    value: int
    reward: float | None = None
    done: bool = False


class _ForeignEnv:
    """Shaped like an OpenEnv server-side env: reset()/step(action) return Observations."""

    def __init__(self) -> None:
        self.value = 0

    def reset(self) -> _Obs:
        self.value = 0
        return _Obs(value=0)

    def step(self, action: _Delta) -> _Obs:
        self.value += action.delta
        return _Obs(value=self.value, reward=float(action.delta), done=self.value > 4)


def test_in_process_modes() -> None:
    local = OpenEnv(
        env_cls="services.envs.counter_env:CounterEnv",
        env_kwargs={"start": 2},
        action_mapper=tool_call_action,
    )
    assert local.reset().observation["value"] == 2
    assert local.step("add", {"delta": 1}).observation["value"] == 3
    foreign = OpenEnv(env_cls=_ForeignEnv, action_cls=_Delta)
    foreign.reset()
    r = foreign.step("play", {"delta": 5})
    assert (r.observation, r.reward, r.done) == ({"value": 5}, 5.0, True)
