"""Key scopes through HTTP: admin routes, user routes, and session keys that open one session only."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import APIRouter
from sqlalchemy.ext.asyncio import AsyncSession

from shared.auth import create_key
from shared.settings import Settings
from shared.web import ServiceSpec, admin_only, session_route

router = APIRouter()


@router.get("/v1/data")
async def read_data() -> dict[str, str]:
    return {"ok": "data"}


@router.put("/v1/config")
@admin_only
async def replace_config() -> dict[str, str]:
    return {"ok": "config"}


@router.post("/sessions/{session_id}/v1/chat/completions")
@session_route("session_id")
async def session_call(session_id: str) -> dict[str, str]:
    return {"session": session_id}


SPEC = ServiceSpec(name="scoped", routers=[router])


async def _key(session: AsyncSession, settings: Settings, scope: Any, session_id: str | None = None) -> str:
    _, key = await create_key(session, f"{scope}-key", salt=settings.key_salt, scope=scope, session_id=session_id)
    await session.commit()
    return key


def _auth(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


async def test_each_scope_reaches_exactly_its_routes(make_client: Any, session: AsyncSession,
                                                     settings: Settings) -> None:
    client: httpx.AsyncClient = await make_client(SPEC, authenticated=False)
    admin, user = await _key(session, settings, "admin"), await _key(session, settings, "user")
    mine = await _key(session, settings, "session", session_id="s-1")

    assert (await client.get("/v1/data", headers=_auth(user))).status_code == 200
    assert (await client.get("/v1/data", headers=_auth(admin))).status_code == 200
    assert (await client.put("/v1/config", headers=_auth(admin))).status_code == 200
    refused = await client.put("/v1/config", headers=_auth(user))
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    assert "admin" in refused.json()["detail"]

    assert (await client.post("/sessions/s-1/v1/chat/completions", headers=_auth(mine))).json() == {"session": "s-1"}
    other = await client.post("/sessions/s-2/v1/chat/completions", headers=_auth(mine))
    assert other.status_code == 403 and other.json()["error"]["type"] == "permission_error"
    assert (await client.get("/v1/data", headers=_auth(mine))).status_code == 403
    assert (await client.put("/v1/config", headers=_auth(mine))).status_code == 403
    assert (await client.post("/sessions/s-2/v1/chat/completions", headers=_auth(user))).status_code == 200


async def test_unknown_scope_and_mismatched_session_are_refused_at_creation(session: AsyncSession,
                                                                            settings: Settings) -> None:
    import pytest

    from shared.errors import InvalidInput

    with pytest.raises(InvalidInput, match="scope"):
        await create_key(session, "x", salt=settings.key_salt, scope="root")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="session"):
        await create_key(session, "x", salt=settings.key_salt, scope="session")
    with pytest.raises(InvalidInput, match="session"):
        await create_key(session, "x", salt=settings.key_salt, scope="user", session_id="s")
