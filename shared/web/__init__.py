"""The web layer shared by every service: app factory, deps, errors, middleware."""

from shared.web.app import Hook, ServiceSpec, create_app
from shared.web.deps import (
    ApiKeyDep,
    DispatcherDep,
    SessionDep,
    SettingsDep,
    StateDep,
    admin_only,
    get_session,
    require_api_key,
    session_route,
    verify_key_value,
)
from shared.web.errors import error_response, is_openai_path
from shared.web.responses import SafeJSONResponse
from shared.web.state import AppState, get_app_state

__all__ = [
    "ApiKeyDep",
    "AppState",
    "DispatcherDep",
    "Hook",
    "SafeJSONResponse",
    "ServiceSpec",
    "SessionDep",
    "SettingsDep",
    "StateDep",
    "admin_only",
    "create_app",
    "error_response",
    "get_app_state",
    "get_session",
    "is_openai_path",
    "require_api_key",
    "session_route",
    "verify_key_value",
]
