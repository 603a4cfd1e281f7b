"""The OpenEnv server through real WebSocket connections to uvicorn on loopback."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from services.envs.base import Env
from services.envs.openenv_server import OpenEnvServer, ServerConfig
from services.envs.registry import EnvRegistry
from shared.schema import StepResult
from tests.services.envs.conftest import serve


def _ws(base: str, path: str = "/envs/counter/ws", **kw: Any) -> ClientConnection:
    return connect(base.replace("http://", "ws://") + path, open_timeout=5, **kw)


def _ask(ws: ClientConnection, frame: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps(frame))
    return json.loads(ws.recv(timeout=5))


class _Boom(Env):
    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        if arguments.get("fail"):
            raise RuntimeError("boom from env")
        return StepResult(observation="fine")

    default_tool = "act"


def test_frames_match_the_reference_shapes(registry: EnvRegistry) -> None:
    with serve(OpenEnvServer(registry)) as base, _ws(base) as ws:
        first = _ask(ws, {"type": "reset", "data": {"seed": 1, "episode_id": "ep-A", "start": 2}})
        assert first == {
            "type": "observation",
            "data": {
                "observation": {"value": 2, "text": "seed=1"},
                "reward": 0.0,
                "done": False,
                "info": {},
            },
        }
        step = _ask(ws, {"type": "step", "data": {"delta": 3}})
        assert (
            step["data"]["observation"] == {"value": 5, "text": "ok"}
            and step["data"]["reward"] == 3.0
        )
        by_tool = _ask(
            ws, {"type": "step", "data": {"tool_name": "echo", "arguments": {"text": "x"}}}
        )
        assert by_tool["data"]["observation"]["text"] == "x"
        state = _ask(ws, {"type": "state"})
        assert state == {
            "type": "state",
            "data": {"episode_id": "ep-A", "step_count": 2, "value": 5},
        }


def test_pipelined_requests_get_in_order_replies(registry: EnvRegistry) -> None:
    with serve(OpenEnvServer(registry)) as base, _ws(base) as ws:
        ws.send(json.dumps({"type": "reset"}))
        for delta in (1, 2, 3):
            ws.send(json.dumps({"type": "step", "data": {"delta": delta}}))
        values = [json.loads(ws.recv(timeout=5))["data"]["observation"]["value"] for _ in range(4)]
        assert values == [0, 1, 3, 6]


def test_errors_keep_the_connection_and_close_is_1000() -> None:
    reg = EnvRegistry()
    reg.register("boom", _Boom)
    with serve(OpenEnvServer(reg)) as base, _ws(base, "/envs/boom/ws") as ws:
        assert _ask(ws, {"type": "step", "data": {"fail": True}})["data"] == {
            "message": "boom from env",
            "code": "EXECUTION_ERROR",
        }
        assert _ask(ws, {"type": "nope"})["data"]["code"] == "UNKNOWN_TYPE"
        assert _ask(ws, {"type": "step", "extra": 1})["data"]["code"] == "VALIDATION_ERROR"
        assert (
            _ask(ws, {"type": "step", "data": {"tool_name": ""}})["data"]["code"]
            == "VALIDATION_ERROR"
        )
        ws.send("{not json")
        assert json.loads(ws.recv(timeout=5))["data"]["code"] == "INVALID_JSON"
        assert _ask(ws, {"type": "step", "data": {}})["data"]["observation"] == {"text": "fine"}
        ws.send(json.dumps({"type": "close"}))
        with pytest.raises(ConnectionClosed) as info:
            ws.recv(timeout=5)
        assert info.value.rcvd is not None and info.value.rcvd.code == 1000


def test_binary_frame_is_a_session_error(registry: EnvRegistry) -> None:
    with serve(OpenEnvServer(registry)) as base, _ws(base) as ws:
        ws.send(b"\x00\x01")
        assert json.loads(ws.recv(timeout=5))["data"]["code"] == "SESSION_ERROR"
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=5)


def test_capacity_is_reported_and_enforced_then_freed_on_disconnect(registry: EnvRegistry) -> None:
    server = OpenEnvServer(registry, ServerConfig(max_sessions=2))
    with serve(server) as base:
        a, b = _ws(base), _ws(base)
        assert a.response is not None and a.response.headers["x-openenv-max-sessions"] == "2"
        with _ws(base) as c:
            frame = json.loads(c.recv(timeout=5))
            assert frame["data"]["code"] == "CAPACITY_REACHED"
            assert (frame["data"]["active_sessions"], frame["data"]["max_sessions"]) == (2, 2)
            with pytest.raises(ConnectionClosed):
                c.recv(timeout=5)
        a.close()  # no close message: a plain disconnect must free the slot
        _wait_for(lambda: server.table.active == 1)
        with _ws(base) as d:
            assert _ask(d, {"type": "reset"})["type"] == "observation"
        b.close()


def test_idle_timeout_closes_the_socket_and_frees_the_slot(registry: EnvRegistry) -> None:
    server = OpenEnvServer(registry, ServerConfig(max_sessions=1, idle_timeout_s=0.3))
    with serve(server) as base:
        idle = _ws(base)
        _ask(idle, {"type": "reset"})
        with pytest.raises(ConnectionClosed) as info:
            idle.recv(timeout=5)
        assert info.value.rcvd is not None and info.value.rcvd.code == 1001
        assert server.table.active == 0
        with _ws(base) as fresh:
            assert _ask(fresh, {"type": "reset"})["type"] == "observation"


def test_keepalive_survives_a_long_gap(registry: EnvRegistry) -> None:
    server = OpenEnvServer(registry)
    with (
        serve(server, ws_ping_interval=0.2, ws_ping_timeout=0.5) as base,
        _ws(base, ping_interval=0.2, ping_timeout=0.5) as ws,
    ):
        _ask(ws, {"type": "reset"})
        time.sleep(1.5)  # several ping/pong rounds with no messages
        assert _ask(ws, {"type": "step", "data": {"delta": 4}})["data"]["observation"]["value"] == 4


def test_capability_url_and_bearer_auth(registry: EnvRegistry) -> None:
    seen: list[str] = []

    def verify(key: str) -> bool:
        seen.append(key)
        return key == "sk-good"

    with serve(OpenEnvServer(registry, verify_key=verify)) as base:
        with _ws(base, "/envs/counter/k/sk-good/ws") as ws:
            assert _ask(ws, {"type": "reset"})["type"] == "observation"
        with _ws(base, additional_headers={"Authorization": "Bearer sk-good"}) as ws:
            assert _ask(ws, {"type": "reset"})["type"] == "observation"
        for path, headers in (("/envs/counter/k/sk-bad/ws", {}), ("/envs/counter/ws", {})):
            with pytest.raises(InvalidStatus) as info:
                _ws(base, path, additional_headers=headers)
            assert info.value.response.status_code == 403
        assert seen[:2] == ["sk-good", "sk-good"] and "sk-bad" in seen


def test_unknown_env_is_refused(registry: EnvRegistry) -> None:
    with serve(OpenEnvServer(registry)) as base, pytest.raises(InvalidStatus):
        _ws(base, "/envs/nope/ws")


def _wait_for(cond: Any, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def test_oversized_message_is_refused_and_session_continues(registry: EnvRegistry) -> None:
    with (
        serve(OpenEnvServer(registry, ServerConfig(max_message_bytes=1024))) as base,
        _ws(base) as ws,
    ):
        big = {"type": "step", "data": {"tool_name": "echo", "arguments": {"text": "x" * 2000}}}
        assert _ask(ws, big)["data"]["code"] == "VALIDATION_ERROR"
        assert _ask(ws, {"type": "reset"})["type"] == "observation"


def _broken_factory() -> Env:
    raise RuntimeError("cannot build env")


def test_factory_error_is_reported_and_the_slot_returns() -> None:
    reg = EnvRegistry()
    reg.register("broken", _broken_factory)
    server = OpenEnvServer(reg, ServerConfig(max_sessions=1))
    with serve(server) as base, _ws(base, "/envs/broken/ws") as ws:
        frame = json.loads(ws.recv(timeout=5))
        assert frame["data"] == {
            "message": "cannot build env",
            "code": "FACTORY_ERROR",
            "factory_name": "broken",
        }
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=5)
        _wait_for(lambda: server.table.active == 0)
