"""The tools service: app factory and its ServiceSpec for the all-in-one app."""

from __future__ import annotations

import logging

import httpx
from fastapi import FastAPI

from services.tools.embeddings import MiniLMEmbedder
from services.tools.memory_store import DbMemoryStore
from services.tools.routes import memory_router, router
from services.tools.service import build_default_service
from shared.sandbox.pool import SandboxPool, sandbox_wanted
from shared.settings import Settings
from shared.web import AppState, ServiceSpec
from shared.web import create_app as _create_app

__all__ = ["SERVICE", "create_app"]

log = logging.getLogger(__name__)


async def _start(app: FastAPI, state: AppState) -> None:
    settings = state.settings
    pool: SandboxPool | None = None
    if sandbox_wanted(settings.tools_sandbox):
        pool = await SandboxPool.from_settings(settings).start()
    else:
        log.warning("bubblewrap (bwrap) is not installed: the python and bash tools are off")
    http = httpx.AsyncClient(timeout=30.0)
    state.resources["sandbox_pool"] = pool
    state.resources["tools_http"] = http
    # Memories live in the database, so every tools process and the REST routes share them.
    app.state.memory_store = DbMemoryStore(state.sessionmaker, MiniLMEmbedder())
    app.state.tool_service = build_default_service(pool, http_client=http, memory=app.state.memory_store)


async def _stop(app: FastAPI, state: AppState) -> None:
    await state.resources.pop("tools_http").aclose()
    pool = state.resources.pop("sandbox_pool")
    if pool is not None:
        await pool.close()


SERVICE = ServiceSpec(
    name="tools",
    routers=[router, memory_router],
    startup=[_start],
    shutdown=[_stop],
    description="Sandboxed tool execution: python, bash, calculator, memory search, HTTP tools.",
)


def create_app(settings: Settings | None = None) -> FastAPI:
    """The tools service on its own."""
    return _create_app(SERVICE, settings=settings)
