"""Dependencies every service injects with ``Annotated`` aliases, and the key-scope markers.

Every authenticated route takes ``user`` and ``admin`` keys unless its endpoint
is marked: ``@admin_only`` (deployment configuration) or
``@session_route("session_id")`` (also opens to the ``session`` key of the
session named by that path parameter). Put the marker below the router's
decorator, so it marks the function the router registers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request, WebSocket
from sqlalchemy.ext.asyncio import AsyncSession

from shared.auth import ApiKeyInfo, Scope, check_scope, parse_bearer
from shared.db.session import session_scope
from shared.queue.dispatch import Dispatcher
from shared.settings import Settings
from shared.web.state import AppState, get_app_state

__all__ = [
    "caller_key",
    "ApiKeyDep",
    "DispatcherDep",
    "SessionDep",
    "SettingsDep",
    "StateDep",
    "admin_only",
    "authenticate",
    "get_session",
    "require_api_key",
    "route_scopes",
    "session_route",
    "verify_key_value",
]

F = TypeVar("F", bound=Callable[..., object])
_SCOPES_ATTR = "__trajforge_scopes__"
_SESSION_PARAM_ATTR = "__trajforge_session_param__"
_DEFAULT_SCOPES: tuple[Scope, ...] = ("user", "admin")


def caller_key(request: Request) -> str | None:
    """The bearer key a request came with (None without one): what a service presents on the caller's
    behalf when it calls another service for that request."""
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() != "bearer ":
        return None
    return auth[7:].strip() or None


def admin_only(endpoint: F) -> F:
    """Mark a route as deployment configuration: admin keys only (others get 403)."""
    setattr(endpoint, _SCOPES_ATTR, ("admin",))
    return endpoint


def session_route(param: str) -> Callable[[F], F]:
    """Mark a route of one gateway session: a ``session`` key whose session is path parameter ``param`` may call it."""

    def mark(endpoint: F) -> F:
        setattr(endpoint, _SCOPES_ATTR, ("user", "admin", "session"))
        setattr(endpoint, _SESSION_PARAM_ATTR, param)
        return endpoint

    return mark


def route_scopes(endpoint: object) -> tuple[Scope, ...]:
    """The key scopes an endpoint admits (``user`` and ``admin`` unless marked)."""
    scopes: tuple[Scope, ...] = getattr(endpoint, _SCOPES_ATTR, _DEFAULT_SCOPES)
    return scopes


def _state(request: Request) -> AppState:
    return get_app_state(request.app)


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    """One session per request: commit on success, roll back on error, then send queued tasks."""
    async with session_scope(_state(request).sessionmaker) as session:
        yield session


async def authenticate(
    state: AppState, authorization: str | None, endpoint: object, path_params: Mapping[str, Any]
) -> ApiKeyInfo | None:
    """The caller's key for a call of ``endpoint``; 401 when missing, malformed or revoked, 403 out of scope.

    ``None`` when auth is off. The one key check: ``require_api_key`` and any
    hot path that answers without FastAPI's dependencies both call it.
    """
    if not state.settings.auth_enabled:
        return None
    info = await state.verifier.verify(parse_bearer(authorization))
    param = getattr(endpoint, _SESSION_PARAM_ATTR, None)
    check_scope(info, route_scopes(endpoint), session_id=path_params.get(param) if param else None)
    return info


async def require_api_key(request: Request) -> ApiKeyInfo | None:
    """The caller's key from ``Authorization: Bearer``; 401 when missing, malformed or revoked."""
    info = await authenticate(_state(request), request.headers.get("authorization"),
                              request.scope.get("endpoint"), request.path_params)
    if info is not None:
        request.state.api_key = info
    return info


async def verify_key_value(websocket: WebSocket, key: str) -> bool:
    """True if ``key`` is a live user or admin key (for capability URLs that carry the key in the path)."""
    state = get_app_state(websocket.app)
    if not state.settings.auth_enabled:
        return True
    try:
        check_scope(await state.verifier.verify(key), _DEFAULT_SCOPES)
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
