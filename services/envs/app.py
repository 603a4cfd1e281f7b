"""The envs service: OpenEnv hosting of every registered environment."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, FastAPI

from services.envs.builtin import register_builtins
from services.envs.code_env import CodeEnv
from services.envs.openenv_server import OpenEnvServer, ServerConfig
from services.envs.registry import EnvRegistry
from services.envs.routes import build_router
from shared.auth import check_scope
from shared.errors import PermissionDenied, ServiceUnavailable
from shared.plugins import load_object
from shared.sandbox.pool import SandboxPool, sandbox_wanted
from shared.settings import Settings
from shared.web import AppState, ServiceSpec, get_app_state
from shared.web import create_app as _create_app

__all__ = ["SERVICE", "create_app"]


def _router(app: FastAPI, settings: Settings) -> APIRouter:
    """The OpenEnv routes of this app, checking keys with the app's verifier (header or path)."""

    async def verify(key: str) -> bool:
        # Envs take user and admin keys; a processor's session key opens its gateway session only.
        try:
            check_scope(await get_app_state(app).verifier.verify(key), ("user", "admin"))
        except PermissionDenied:
            return False
        return True

    config = ServerConfig(max_sessions=settings.envs_max_sessions, idle_timeout_s=settings.envs_idle_timeout_s,
                          max_message_bytes=settings.max_request_bytes)
    registry = register_builtins(EnvRegistry())
    registry.register("code", lambda **kw: CodeEnv(pool=_code_pool(app), loop=app.state.envs_loop, **kw))
    for name, classpath in settings.envs_extra.items():
        registry.register(name, load_object(classpath, what="env", param="TRAJFORGE_ENVS_EXTRA"))
    server = OpenEnvServer(registry, config, verify_key=verify if settings.auth_enabled else None)
    app.state.openenv_server = server
    return build_router(server)


def _code_pool(app: FastAPI) -> SandboxPool:
    pool: SandboxPool | None = app.state.envs_sandbox_pool
    if pool is None:
        raise ServiceUnavailable("the code env needs bubblewrap (bwrap), which is not installed here")
    return pool


async def _start(app: FastAPI, state: AppState) -> None:
    app.state.envs_loop = asyncio.get_running_loop()
    app.state.envs_sandbox_pool = None
    if not sandbox_wanted(state.settings.tools_sandbox):
        return  # tools_sandbox=optional and no bwrap: every env but ``code`` is served
    # The code env's sandboxes; slots are directories until used, so a small pool is cheap.
    # The same sandbox profile and limits as the tools service (SandboxPool.from_settings).
    pool = SandboxPool.from_settings(state.settings, pool_size=max(1, state.settings.tools_pool_size // 2),
                                     uid_base=state.settings.tools_uid_base + 1000)
    app.state.envs_sandbox_pool = await pool.start()


async def _stop(app: FastAPI, state: AppState) -> None:
    await app.state.openenv_server.aclose()
    if app.state.envs_sandbox_pool is not None:
        await app.state.envs_sandbox_pool.close()


SERVICE = ServiceSpec(
    name="envs",
    public_router_factories=[_router],
    startup=[_start],
    shutdown=[_stop],
    description="Environments over the OpenEnv protocol (WebSocket and stateful HTTP).",
)


def create_app(settings: Settings | None = None) -> FastAPI:
    """The envs service on its own."""
    return _create_app(SERVICE, settings=settings)
