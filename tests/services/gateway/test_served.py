"""The gateway served as ``trajforge serve gateway`` serves it: its proxy calls come in through the direct
entry and answer exactly as the app answers them in process."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy.ext.asyncio import create_async_engine

from services.gateway.app import SERVICE
from services.gateway.testing_upstream import ServerThread
from shared.auth import create_key
from shared.db.session import make_sessionmaker
from shared.settings import Settings
from shared.web import create_app
from shared.web.direct import DirectEntry, direct_entry_of
from tests.conftest import LoopbackServer

CHAT = {"model": "policy", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


@pytest.fixture
def gateway_settings(settings: Settings, upstreams: list[ServerThread], tmp_path: Path) -> Settings:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"upstreams": [{"model": "policy", "url": upstreams[0].url, "name": "a"}]}))
    return settings.model_copy(update={"gateway_config": str(config), "max_request_bytes": 4096})


@pytest.fixture
def served(gateway_settings: Settings) -> Iterator[tuple[str, Any]]:
    """The gateway service app on a loopback port, with the services' server config and its lifespan."""
    app = create_app(SERVICE, settings=gateway_settings)
    with LoopbackServer(app, services_config=True, log_level="warning") as server:
        yield server.url, app


@pytest.fixture
async def in_process(gateway_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(SERVICE, settings=gateway_settings)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        yield client


@pytest.fixture
async def key(settings: Settings) -> str:
    engine = create_async_engine(settings.effective_database_url)
    try:
        async with make_sessionmaker(engine)() as db:
            _, value = await create_key(db, "served", salt=settings.key_salt)
            await db.commit()
            return value
    finally:
        await engine.dispose()


def test_the_gateway_app_has_its_proxy_as_direct_entry(gateway_settings: Settings) -> None:
    entry = direct_entry_of(create_app(SERVICE, settings=gateway_settings))
    assert isinstance(entry, DirectEntry) and len(entry.hot) == 1


async def test_served_proxy_calls_answer_trace_and_count_as_in_process(
    served: tuple[str, Any], in_process: httpx.AsyncClient, key: str,
) -> None:
    url, _ = served
    auth = {"authorization": f"Bearer {key}"}
    sid = f"served-{uuid.uuid4().hex[:10]}"
    route = "/sessions/{session_id}/v1/chat/completions"
    labels = {"service": "gateway", "method": "POST", "route": route, "status": "200"}
    before = REGISTRY.get_sample_value("trajforge_http_requests_total", labels) or 0.0
    async with httpx.AsyncClient(base_url=url) as client:
        ok = await client.post(f"/sessions/{sid}/v1/chat/completions", json=CHAT,
                               headers={**auth, "x-request-id": "served-1"})
        assert ok.status_code == 200 and ok.headers["x-request-id"] == "served-1"
        assert ok.json()["choices"][0]["message"]["role"] == "assistant"
        traces = (await client.get(f"/v1/sessions/{sid}/traces", headers=auth)).json()
        assert [t["request"] for t in traces] == [CHAT]
        # Refusals: the same status and body as the app in process gives.
        cases: list[dict[str, Any]] = [
            {"json": CHAT},  # no key
            {"json": CHAT, "headers": {"authorization": "Bearer nope"}},
            {"content": b"{not json", "headers": {**auth, "content-type": "application/json"}},
            {"json": {**CHAT, "pad": "x" * 5000}, "headers": auth},  # over the body limit
            {"json": {"model": "policy", "messages": []}, "headers": auth},
            {"json": {**CHAT, "model": "unknown"}, "headers": auth},
        ]
        for case in cases:
            served_reply = await client.post(f"/sessions/{sid}/v1/chat/completions", **case)
            local_reply = await in_process.post(f"/sessions/{sid}/v1/chat/completions", **case)
            assert served_reply.status_code == local_reply.status_code != 200, case
            assert served_reply.json() == local_reply.json(), case
    # The served 200 counts under its route, as an in-process one would (the refusals count under theirs).
    assert REGISTRY.get_sample_value("trajforge_http_requests_total", labels) == before + 1


async def test_served_streams_relay_every_event_and_store_their_trace(served: tuple[str, Any], key: str) -> None:
    url, _ = served
    auth = {"authorization": f"Bearer {key}"}
    sid = f"served-{uuid.uuid4().hex[:10]}"
    async with httpx.AsyncClient(base_url=url) as client:
        whole = (await client.post(f"/sessions/{sid}/v1/chat/completions", json=CHAT, headers=auth)).json()
        async with client.stream("POST", f"/sessions/{sid}/v1/chat/completions", json={**CHAT, "stream": True},
                                 headers=auth) as reply:
            assert reply.headers["content-type"].startswith("text/event-stream")
            events = [line.removeprefix("data: ") async for line in reply.aiter_lines() if line.startswith("data: ")]
        traces = (await client.get(f"/v1/sessions/{sid}/traces", headers=auth)).json()
    assert events[-1] == "[DONE]" and len(events) > 2
    text = "".join(c["choices"][0]["delta"].get("content") or ""
                   for c in map(json.loads, events[:-1]) if c["choices"])
    assert text == whole["choices"][0]["message"]["content"]
    assert [t["stream"] for t in traces] == [False, True] and traces[1]["status"] == "ok"
