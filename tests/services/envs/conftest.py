"""Fixtures: a real uvicorn server on loopback hosting the env router."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi import FastAPI

from services.envs.builtin import register_builtins
from services.envs.openenv_server import OpenEnvServer
from services.envs.registry import EnvRegistry
from services.envs.routes import build_router
from shared.web.errors import install_error_handlers
from tests.conftest import LoopbackServer


def make_app(server: OpenEnvServer) -> FastAPI:
    """A bare app with the env router and the suite's error handlers (problem details)."""
    app = FastAPI()
    app.include_router(build_router(server))
    install_error_handlers(app)
    return app


@contextmanager
def serve(server: OpenEnvServer, **uvicorn_kwargs: Any) -> Iterator[str]:
    """Run uvicorn in a thread on a free loopback port; yield the base URL."""
    with LoopbackServer(make_app(server), **uvicorn_kwargs) as served:
        yield served.url


@pytest.fixture
def registry() -> EnvRegistry:
    """A fresh registry with the built-in envs."""
    return register_builtins(EnvRegistry())
