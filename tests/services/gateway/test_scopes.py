"""The gateway's configuration is admin-only and never shows an upstream's secret."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from services.gateway.app import SERVICE
from shared.auth import create_key
from shared.settings import Settings

SECRET = "sk-upstream-secret-value"


async def _auth(session: AsyncSession, settings: Settings, scope: Any, session_id: str | None = None
                ) -> dict[str, str]:
    _, key = await create_key(session, f"gw-{scope}", salt=settings.key_salt, scope=scope, session_id=session_id)
    await session.commit()
    return {"authorization": f"Bearer {key}"}


async def test_upstreams_are_redacted_and_admin_only(make_client: Any, session: AsyncSession, settings: Settings,
                                                     tmp_path: Path) -> None:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"upstreams": [{"model": "policy", "url": "http://127.0.0.1:9", "name": "a",
                                                 "api_key": SECRET}]}))
    client = await make_client(SERVICE, authenticated=False, gateway_config=str(config))
    admin = await _auth(session, settings, "admin")
    user = await _auth(session, settings, "user")
    processor = await _auth(session, settings, "session", session_id="rollout-1")

    listed = await client.get("/v1/gateway/upstreams", headers=admin)
    assert listed.status_code == 200 and SECRET not in listed.text
    assert listed.json()[0]["api_key_set"] is True and "api_key" not in listed.json()[0]
    put = await client.put("/v1/gateway/upstreams", headers=admin, json=[
        {"model": "other", "url": "http://127.0.0.1:9", "name": "b", "api_key": "sk-new-secret"}])
    assert put.status_code == 200 and "sk-new-secret" not in put.text and put.json()[0]["model"] == "other"

    for key in (user, processor):
        assert (await client.get("/v1/gateway/upstreams", headers=key)).status_code == 403
        assert (await client.put("/v1/gateway/upstreams", headers=key, json=[])).status_code == 403
        assert (await client.post("/v1/gateway/drain", headers=key, json={})).status_code == 403
        assert (await client.post("/v1/gateway/resume", headers=key)).status_code == 403
    assert (await client.post("/v1/gateway/drain", headers=admin, json={})).json()["draining"] is True
    assert (await client.post("/v1/gateway/resume", headers=admin)).json()["draining"] is False

    # A processor's key opens its own session and nothing else.
    assert (await client.get("/sessions/rollout-1/v1/models", headers=processor)).status_code == 200
    assert (await client.get("/v1/sessions/rollout-1/traces", headers=processor)).status_code == 200
    assert (await client.get("/sessions/rollout-2/v1/models", headers=processor)).status_code == 403
    assert (await client.get("/v1/sessions/rollout-2/traces", headers=processor)).status_code == 403
    assert (await client.get("/v1/models", headers=processor)).status_code == 403
    assert (await client.get("/v1/models", headers=user)).status_code == 200
