"""The envs service: OpenEnv hosting of every registered environment."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from services.envs.builtin import register_builtins
from services.envs.openenv_server import OpenEnvServer, ServerConfig
from services.envs.registry import EnvRegistry
from services.envs.routes import build_router
from shared.settings import Settings
from shared.web import AppState, ServiceSpec, create_app as _create_app, get_app_state

__all__ = ["SERVICE", "create_app"]


def _router(app: FastAPI, settings: Settings) -> APIRouter:
    """The OpenEnv routes of this app, checking keys with the app's verifier (header or path)."""

    async def verify(key: str) -> bool:
        await get_app_state(app).verifier.verify(key)
        return True

    config = ServerConfig(max_sessions=settings.envs_max_sessions, idle_timeout_s=settings.envs_idle_timeout_s,
                          max_message_bytes=settings.envs_max_message_bytes)
    server = OpenEnvServer(register_builtins(EnvRegistry()), config,
                           verify_key=verify if settings.auth_enabled else None)
    app.state.openenv_server = server
    return build_router(server)


async def _stop(app: FastAPI, state: AppState) -> None:
    await app.state.openenv_server.aclose()


SERVICE = ServiceSpec(
    name="envs",
    public_router_factories=[_router],
    shutdown=[_stop],
    description="Environments over the OpenEnv protocol (WebSocket and stateful HTTP).",
)


def create_app(settings: Settings | None = None) -> FastAPI:
    """The envs service on its own."""
    return _create_app(SERVICE, settings=settings)
