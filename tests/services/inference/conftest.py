"""Shared fixtures: the real SmolLM2 model loaded once, an app with the routes, a loopback server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from services.inference.config import engine_config
from services.inference.engine import Engine
from services.inference.loader import LoadedModel, load_model, resolve_source
from services.inference.routes import control_router, router
from services.inference.service import EngineHolder, get_engine_holder
from shared.web.errors import install_error_handlers
from tests.conftest import LoopbackServer


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


@pytest.fixture(scope="session")
def server_url(app: FastAPI) -> Iterator[str]:
    """The app served by uvicorn on loopback (a real vLLM-subset server)."""
    with LoopbackServer(app) as server:
        yield server.url


def chat_body(**extra: Any) -> dict[str, Any]:
    """A small chat request for the served model."""
    body: dict[str, Any] = {"messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 8}
    body.update(extra)
    return body
