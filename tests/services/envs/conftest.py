"""Fixtures: a real uvicorn server on loopback hosting the env router."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI

from services.envs.builtin import register_builtins
from services.envs.openenv_server import OpenEnvServer
from services.envs.registry import EnvRegistry
from services.envs.routes import build_router
from shared.web.errors import install_error_handlers


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_app(server: OpenEnvServer) -> FastAPI:
    """A bare app with the env router and the suite's error handlers (problem details)."""
    app = FastAPI()
    app.include_router(build_router(server))
    install_error_handlers(app)
    return app


@contextmanager
def serve(server: OpenEnvServer, **uvicorn_kwargs: Any) -> Iterator[str]:
    """Run uvicorn in a thread on a free loopback port; yield the base URL."""
    port = free_port()
    config = uvicorn.Config(
        make_app(server), host="127.0.0.1", port=port, log_level="warning", **uvicorn_kwargs
    )
    userver = uvicorn.Server(config)
    thread = threading.Thread(target=userver.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not userver.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        userver.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def registry() -> EnvRegistry:
    """A fresh registry with the built-in envs."""
    return register_builtins(EnvRegistry())
