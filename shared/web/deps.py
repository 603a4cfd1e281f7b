"""Dependencies every service injects with ``Annotated`` aliases."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request, WebSocket
from sqlalchemy.ext.asyncio import AsyncSession

from shared.auth import ApiKeyInfo, parse_bearer
from shared.db.session import session_scope
from shared.queue.dispatch import Dispatcher
from shared.settings import Settings
from shared.web.state import AppState, get_app_state

__all__ = [
    "ApiKeyDep",
    "DispatcherDep",
    "SessionDep",
    "SettingsDep",
    "StateDep",
    "get_session",
    "require_api_key",
    "verify_key_value",
]


def _state(request: Request) -> AppState:
    return get_app_state(request.app)


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    """One session per request: commit on success, roll back on error, then send queued tasks."""
    async with session_scope(_state(request).sessionmaker) as session:
        yield session


async def require_api_key(request: Request) -> ApiKeyInfo | None:
    """The caller's key from ``Authorization: Bearer``; 401 when missing, malformed or revoked."""
    state = _state(request)
    if not state.settings.auth_enabled:
        return None
    info = await state.verifier.verify(parse_bearer(request.headers.get("authorization")))
    request.state.api_key = info
    return info


async def verify_key_value(websocket: WebSocket, key: str) -> bool:
    """True if ``key`` is a live API key (for capability URLs that carry the key in the path)."""
    state = get_app_state(websocket.app)
    if not state.settings.auth_enabled:
        return True
    try:
        await state.verifier.verify(key)
    except Exception:
        return False
    return True


def _settings(request: Request) -> Settings:
    return _state(request).settings


def _dispatcher(request: Request) -> Dispatcher:
    return _state(request).dispatcher


StateDep = Annotated[AppState, Depends(_state)]
SettingsDep = Annotated[Settings, Depends(_settings)]
DispatcherDep = Annotated[Dispatcher, Depends(_dispatcher)]
SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]
ApiKeyDep = Annotated[ApiKeyInfo | None, Depends(require_api_key)]
