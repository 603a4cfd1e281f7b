"""The envs service inside the real app: header keys, capability URLs, and refusals."""

from __future__ import annotations

from fastapi.testclient import TestClient

from services.envs.app import SERVICE
from shared.auth import create_key
from shared.db.session import make_sessionmaker
from shared.web import create_app


async def test_http_session_with_bearer_and_capability_url(make_client, api_key) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SERVICE)
    reset = await client.post("/envs/counter/reset", json={"seed": 1})
    assert reset.status_code == 200, reset.text
    sid = reset.json()["session_id"]
    step = await client.post("/envs/counter/step", json={"session_id": sid, "action": {"delta": 2}})
    assert step.status_code == 200 and step.json()["session_id"] == sid
    anonymous = client.headers.copy()
    del anonymous["authorization"]
    meta = await client.get(f"/envs/counter/k/{api_key}/metadata", headers=anonymous)
    assert meta.status_code == 200 and meta.json()["name"] == "counter"
    bogus = await client.get("/envs/counter/k/tf_" + "b" * 43 + "/metadata", headers=anonymous)
    assert bogus.status_code == 401
    health = await client.get("/envs/counter/health", headers=anonymous)
    assert health.status_code == 200 and health.json()["max_sessions"] >= 1


async def test_websocket_capability_url_accepts_a_live_key_only(settings, engine) -> None:  # type: ignore[no-untyped-def]
    # The app below uses its own connections, so the key is committed for real.
    async with make_sessionmaker(engine)() as session:
        _, key = await create_key(session, "ws", salt=settings.key_salt)
        await session.commit()
    app = create_app(SERVICE, settings=settings)
    with TestClient(app) as tc, tc.websocket_connect(f"/envs/counter/k/{key}/ws") as ws:
        ws.send_json({"type": "reset", "data": {}})
        reply = ws.receive_json()
        assert reply["type"] == "observation"


async def test_a_session_key_opens_no_env(make_client, session, settings) -> None:  # type: ignore[no-untyped-def]
    """A processor's session-scoped key reaches its gateway session only, not the envs."""
    _, key = await create_key(session, "proc", salt=settings.key_salt, scope="session", session_id="s-1")
    await session.commit()
    client = await make_client(SERVICE, authenticated=False)
    assert (await client.get("/envs/counter/metadata", headers={"authorization": f"Bearer {key}"})).status_code == 401
    assert (await client.get(f"/envs/counter/k/{key}/metadata")).status_code == 401
    assert (await client.get("/envs/counter/health")).status_code == 200
