"""Shared fixtures: the real SmolLM2 model loaded once, an app with the routes, a loopback server."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from services.inference.config import engine_config
from services.inference.engine import Engine
from services.inference.loader import LoadedModel, load_model, resolve_source
from services.inference.routes import control_router, router
from services.inference.service import EngineHolder, get_engine_holder
from shared.web.errors import install_error_handlers


@pytest.fixture(scope="session")
def loaded() -> LoadedModel:
    """The default model (converted weights come from the cache after the first run)."""
    return load_model(resolve_source(""), cache_dir=engine_config().cache_dir)


@pytest.fixture(scope="session")
def local_engine(loaded: LoadedModel) -> Iterator[Engine]:
    """One engine for the whole session."""
    eng = Engine(loaded.model, loaded.tokenizer, name=loaded.name, max_batch_size=8)
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def app(local_engine: Engine) -> FastAPI:
    """A bare app with the inference routers and the suite's error handlers."""
    application = FastAPI()
    application.include_router(router)
    application.include_router(control_router)
    holder = EngineHolder(engine=local_engine)
    application.dependency_overrides[get_engine_holder] = lambda: holder
    install_error_handlers(application)
    return application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """In-process HTTP client."""
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://engine") as c:
        yield c


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def server_url(app: FastAPI) -> Iterator[str]:
    """The app served by uvicorn on loopback (a real vLLM-subset server)."""
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def chat_body(**extra: Any) -> dict[str, Any]:
    """A small chat request for the served model."""
    body: dict[str, Any] = {"messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 8}
    body.update(extra)
    return body
