"""Several gateway replicas serve one deployment: two real gateway apps, each with its own state and
trace sink, on loopback against the run's Postgres, append to one session; the session reads back from
either replica in the order the calls were made, numbered 0..n-1 without gaps, and merges into one
token-exact segment (which needs every call in its place). The upstream is the fake OpenAI upstream
(byte-level template, scripted replies), served on loopback."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from services.gateway.app import SERVICE as GATEWAY
from services.gateway.testing_upstream import ServerThread, make_upstream_app
from shared.auth import create_key
from shared.db.session import make_sessionmaker
from shared.settings import Settings
from shared.web import create_app
from tests.conftest import LoopbackServer


@pytest.fixture(scope="module")
def upstream() -> Iterator[ServerThread]:
    server = ServerThread(make_upstream_app("up")).start()
    yield server
    server.stop()


@pytest.fixture
async def replicas(settings: Settings, upstream: ServerThread, tmp_path: Path) -> AsyncIterator[list[httpx.AsyncClient]]:
    """Two gateway processes' worth of state: separate apps, sinks, engines and event loops."""
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"upstreams": [{"model": "policy", "url": upstream.url, "name": "up"}]}))
    engine = create_async_engine(settings.effective_database_url)
    async with make_sessionmaker(engine)() as session:
        _, key = await create_key(session, "replicas", salt=settings.key_salt, scope="admin")
        await session.commit()
    await engine.dispose()
    servers = [LoopbackServer(create_app(GATEWAY, settings=settings.model_copy(update={"gateway_config": str(config)})))
               for _ in range(2)]
    clients = []
    for server in servers:
        server.__enter__()
        clients.append(httpx.AsyncClient(base_url=server.url, headers={"authorization": f"Bearer {key}"},
                                         timeout=30))
    yield clients
    for client in clients:
        await client.aclose()
    for server in servers:
        server.__exit__(None)


async def _call(client: httpx.AsyncClient, session_id: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    resp = await client.post(f"/sessions/{session_id}/v1/chat/completions",
                             json={"model": "policy", "messages": messages})
    assert resp.status_code == 200, resp.text
    out: dict[str, Any] = resp.json()
    return out


async def _traces(reader: httpx.AsyncClient, session_id: str, count: int) -> list[dict[str, Any]]:
    """The session's traces once ``count`` are stored: a reader flushes its own queue, not the other
    replica's, whose last batch may still be on its way to the database."""
    import asyncio

    for _ in range(200):
        traces: list[dict[str, Any]] = (await reader.get(f"/v1/sessions/{session_id}/traces")).json()
        if len(traces) >= count:
            return traces
        await asyncio.sleep(0.05)
    return traces


async def test_two_replicas_appending_to_one_session_read_back_in_call_order(
        replicas: list[httpx.AsyncClient]) -> None:
    a, b = replicas
    order = [a, b, a, a, b, b, a, b]  # each replica's own count would restart and collide
    messages: list[dict[str, Any]] = [{"role": "user", "content": "turn 0"}]
    for turn, replica in enumerate(order):
        reply = await _call(replica, "shared-session", messages)
        messages += [{"role": "assistant", "content": reply["choices"][0]["message"]["content"]},
                     {"role": "user", "content": f"turn {turn + 1}"}]
    for reader in (a, b):
        traces = await _traces(reader, "shared-session", len(order))
        assert [t["sequence"] for t in traces] == list(range(len(order)))  # gap-free, one per call
        assert [t["request"]["messages"][-1]["content"] for t in traces] == [f"turn {i}" for i in range(len(order))]
        merged = (await reader.get("/v1/sessions/shared-session/trajectory")).json()
        assert len(merged["segments"]) == 1 and merged["joins"] == len(order) - 1 and merged["mismatches"] == []


async def test_concurrent_sessions_on_both_replicas_keep_each_sessions_order(
        replicas: list[httpx.AsyncClient]) -> None:
    import asyncio

    async def conversation(name: str, start: int) -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": f"{name} 0"}]
        for turn in range(6):
            reply = await _call(replicas[(start + turn) % 2], name, messages)
            messages += [{"role": "assistant", "content": reply["choices"][0]["message"]["content"]},
                         {"role": "user", "content": f"{name} {turn + 1}"}]

    names = [f"s{i}" for i in range(6)]
    await asyncio.gather(*(conversation(n, i) for i, n in enumerate(names)))
    for name in names:
        traces = await _traces(replicas[0], name, 6)
        assert [t["sequence"] for t in traces] == list(range(6))
        assert [t["request"]["messages"][-1]["content"] for t in traces] == [f"{name} {i}" for i in range(6)]
