"""HTTP routes: info endpoints and stateful sessions keyed by session id."""

from __future__ import annotations

import httpx
import pytest

from services.envs.openenv_server import OpenEnvServer, ServerConfig
from services.envs.registry import EnvRegistry
from tests.services.envs.conftest import make_app


def _client(server: OpenEnvServer) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=make_app(server)), base_url="http://t"
    )


async def test_health_metadata_schema(registry: EnvRegistry) -> None:
    async with _client(OpenEnvServer(registry)) as c:
        assert (await c.get("/envs/counter/health")).json()["status"] == "healthy"
        meta = (await c.get("/envs/counter/metadata")).json()
        assert meta["name"] == "counter" and isinstance(meta["description"], str)
        schema = (await c.get("/envs/counter/schema")).json()
        assert set(schema) >= {"action", "observation", "state"}
        assert [t["function"]["name"] for t in schema["tools"]] == ["add", "echo"]
        assert (await c.get("/envs/nope/health")).status_code == 404


async def test_http_sessions_keep_state_between_calls(registry: EnvRegistry) -> None:
    async with _client(OpenEnvServer(registry)) as c:
        first = (await c.post("/envs/counter/reset", json={"seed": 3, "start": 1})).json()
        sid = first["session_id"]
        await c.post("/envs/counter/step", json={"session_id": sid, "action": {"delta": 3}})
        second = (
            await c.post("/envs/counter/step", json={"session_id": sid, "action": {"delta": 3}})
        ).json()
        # The reference's stateless HTTP would answer 3 twice; a real session accumulates.
        assert second["observation"]["value"] == 7 and second["reward"] == 3.0
        state = (await c.get("/envs/counter/state", params={"session_id": sid})).json()
        assert state["step_count"] == 2 and state["value"] == 7
        again = (await c.post("/envs/counter/reset", json={"session_id": sid})).json()
        assert again["session_id"] == sid and again["observation"]["value"] == 0
        assert (await c.delete(f"/envs/counter/sessions/{sid}")).status_code == 204
        gone = await c.post("/envs/counter/step", json={"session_id": sid, "action": {"delta": 1}})
        assert gone.status_code == 404 and gone.json()["code"] == "env_session_not_found"


async def test_http_capacity_and_idle_reap(registry: EnvRegistry) -> None:
    server = OpenEnvServer(registry, ServerConfig(max_sessions=1, idle_timeout_s=60))
    async with _client(server) as c:
        sid = (await c.post("/envs/counter/reset", json={})).json()["session_id"]
        full = await c.post("/envs/counter/reset", json={})
        assert full.status_code == 503 and full.json()["code"] == "env_capacity_reached"
        server.table.sessions[sid].last_activity -= 120  # make it idle past the timeout
        fresh = await c.post("/envs/counter/reset", json={})
        assert fresh.status_code == 200 and fresh.json()["session_id"] != sid
        assert (await c.get("/envs/counter/state", params={"session_id": sid})).status_code == 404


async def test_bad_action_is_422_shaped_not_500(registry: EnvRegistry) -> None:
    # tool_routing has no default tool, so an action without tool_name is invalid.
    async with _client(OpenEnvServer(registry)) as c:
        sid = (await c.post("/envs/tool_routing/reset", json={})).json()["session_id"]
        bad = await c.post(
            "/envs/tool_routing/step", json={"session_id": sid, "action": {"item_id": "A1"}}
        )
        assert bad.status_code == 422 and bad.json()["code"] == "validation_failed"


@pytest.mark.parametrize(
    "prefix,headers,status",
    [
        ("/envs/counter/k/sk-good", {}, 200),
        ("/envs/counter", {"Authorization": "Bearer sk-good"}, 200),
        ("/envs/counter/k/sk-bad", {}, 401),
        ("/envs/counter", {}, 401),
    ],
)
async def test_http_auth_forms(
    registry: EnvRegistry, prefix: str, headers: dict[str, str], status: int
) -> None:
    server = OpenEnvServer(registry, verify_key=lambda k: k == "sk-good")
    async with _client(server) as c:
        assert (await c.get(f"{prefix}/health")).status_code == 200
        assert (await c.post(f"{prefix}/reset", json={}, headers=headers)).status_code == status


async def test_async_verifier_raising_authentication_error(registry: EnvRegistry) -> None:
    from shared.errors import AuthenticationError

    async def verify(key: str) -> object:
        if key != "tf_good":
            raise AuthenticationError("invalid or revoked API key")
        return {"id": 1}

    async with _client(OpenEnvServer(registry, verify_key=verify)) as c:
        assert (await c.post("/envs/counter/k/tf_good/reset", json={})).status_code == 200
        assert (await c.post("/envs/counter/k/tf_bad/reset", json={})).status_code == 401
