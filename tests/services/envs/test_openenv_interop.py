"""Real peers: the stock openenv-core 0.3.0 client against our server, our client against its server.

openenv-core lives in its own virtual environment (``tests.openenv_peer``), so both directions
run it in a subprocess on loopback.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from websockets.sync.client import connect

from services.envs.base import EnvTool
from services.envs.counter_env import CounterEnv
from services.envs.errors import SessionCapacityReached
from services.envs.openenv_client import OpenEnv
from services.envs.openenv_server import OpenEnvServer
from services.envs.registry import EnvRegistry
from shared.errors import InvalidInput
from tests.openenv_peer import PEER_DIR
from tests.services.envs.conftest import serve


def test_stock_openenv_clients_drive_our_server(peer_python: Path, registry: EnvRegistry) -> None:
    with serve(OpenEnvServer(registry)) as base:
        out = subprocess.run(
            [str(peer_python), str(PEER_DIR / "client_check.py"), f"{base}/envs/counter"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    generic = report["generic"]
    assert generic["reset"] == {"value": 2, "text": "seed=1"}
    assert generic["step"] == {"value": 5, "text": "ok"} and generic["reward"] == 3.0
    assert generic["state"]["step_count"] == 1 and generic["state"]["value"] == 5
    assert report["typed"] == {"value": 4, "reward": 4.0}  # typed parse: no extra observation keys
    assert report["sync"] == {"values": [1, 2]}


def test_our_client_drives_the_reference_server(reference_server: str) -> None:
    env = OpenEnv(base_url=reference_server, tool_schema=CounterEnv().tools()[:1])
    first = env.reset({"start": 2}, seed=1)
    assert first.observation == {"value": 2, "text": "seed=1"}
    (add,) = EnvTool.from_env(env)
    assert add("add", {"delta": 3}) == "ok" and add("add", {"delta": 4}) == "ok"
    assert add.episode_reward == 7.0 and add.last_result is not None
    assert add.last_result.observation["value"] == 9
    assert env.state()["value"] == 9
    env.close()


class _Delta(BaseModel):
    """The reference counter's action, typed on our side."""

    model_config = ConfigDict(extra="forbid")

    delta: int


def test_the_seed_remote_form_uses_env_cls_and_env_kwargs(reference_server: str) -> None:
    env = OpenEnv(base_url=reference_server, env_cls=_Delta, env_kwargs={"message_timeout_s": 7.5},
                  tool_schema=CounterEnv().tools()[:1])
    assert env.channel.message_timeout_s == 7.5  # env_kwargs configure the client
    env.reset()
    assert env.step("add", {"delta": 2}).observation == {"value": 2, "text": "ok"}
    with pytest.raises(InvalidInput, match="_Delta"):  # typed before anything is sent
        env.step("add", {"delta": "two", "extra": 1})
    assert env.step("add", {"delta": 1}).observation["value"] == 3  # the session is still in step
    env.close()
    with pytest.raises(InvalidInput, match="env_kwargs"):
        OpenEnv(base_url=reference_server, env_kwargs={"start": 2})
    with pytest.raises(InvalidInput, match="env_cls"):
        OpenEnv(base_url=reference_server, env_cls="services.envs.counter_env:CounterEnv")


def test_our_client_reads_reference_capacity_refusal(reference_server: str) -> None:
    holders = [OpenEnv(base_url=reference_server) for _ in range(2)]
    for h in holders:
        h.reset()
    with pytest.raises(SessionCapacityReached):
        OpenEnv(base_url=reference_server, max_reconnects=0).reset()
    for h in holders:
        h.close()


def _frames(url: str) -> list[dict[str, Any]]:
    seq = [
        {"type": "reset", "data": {"seed": 1, "start": 2}},
        {"type": "step", "data": {"delta": 3}},
        {"type": "step", "data": {"delta": "x"}},
        {"type": "nope"},
    ]
    with connect(url, open_timeout=10) as ws:
        out = []
        for frame in seq:
            ws.send(json.dumps(frame))
            reply = json.loads(ws.recv(timeout=10))
            reply["data"].pop("info", None)  # our addition beside the reference payload
            reply["data"].pop("errors", None)
            if reply["type"] == "error":
                reply["data"].pop("message")
            out.append(reply)
    return out


def test_same_frames_from_both_servers(reference_server: str, registry: EnvRegistry) -> None:
    theirs = _frames(reference_server.replace("http://", "ws://") + "/ws")
    with serve(OpenEnvServer(registry)) as base:
        ours = _frames(base.replace("http://", "ws://") + "/envs/counter/ws")
    assert ours == theirs
