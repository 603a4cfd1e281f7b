"""The proxy's ASGI fast path: same keys, scopes, errors, labels and traces as the routes it stands in for."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

from services.gateway.app import SERVICE
from services.gateway.fastpath import match_proxy_path
from services.gateway.testing_upstream import ServerThread
from shared.auth import create_key, revoke_key
from shared.db.session import make_sessionmaker
from shared.settings import Settings
from shared.web import create_app

CHAT = {"model": "policy", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


@pytest.mark.parametrize(("path", "expected"), [
    ("/v1/chat/completions", ("/v1/chat/completions", "/v1/chat/completions", None, None)),
    ("/v1/completions", ("/v1/completions", "/v1/completions", None, None)),
    ("/sessions/s-1/v1/chat/completions",
     ("/sessions/{session_id}/v1/chat/completions", "/v1/chat/completions", "s-1", None)),
    ("/sessions/s-1/attempts/3/v1/completions",
     ("/sessions/{session_id}/attempts/{attempt}/v1/completions", "/v1/completions", "s-1", 3)),
    # Left to the routes, which answer these as they always did.
    ("/sessions/s-1/attempts/x/v1/chat/completions", None),
    ("/sessions/s-1/attempts/-1/v1/chat/completions", None),
    ("/sessions//v1/chat/completions", None),
    ("/v1/chat/completions/", None),
    ("/sessions/s-1/v1/models", None),
    ("/sessions/a/b/v1/chat/completions", None),
])
def test_paths_it_takes_and_leaves(path: str, expected: object) -> None:
    assert match_proxy_path(path) == expected


@pytest.fixture
async def gw(settings: Settings, upstreams: list[ServerThread], tmp_path: Path) -> AsyncIterator[Any]:
    """The gateway service app on its own engine (its sink and key checks commit, as in production)."""
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"upstreams": [{"model": "policy", "url": upstreams[0].url, "name": "a"}]}))
    app = create_app(SERVICE, settings=settings.model_copy(update={"gateway_config": str(config)}))
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c


@pytest.fixture
async def db(settings: Settings) -> AsyncIterator[AsyncSession]:
    """A session whose commits the gateway app sees."""
    engine = create_async_engine(settings.effective_database_url)
    try:
        async with make_sessionmaker(engine)() as session:
            yield session
    finally:
        await engine.dispose()


async def _key(session: AsyncSession, settings: Settings, scope: Any = "user", session_id: str | None = None
               ) -> tuple[Any, dict[str, str]]:
    row, key = await create_key(session, f"fp-{scope}", salt=settings.key_salt, scope=scope, session_id=session_id)
    await session.commit()
    return row, {"authorization": f"Bearer {key}"}


def _sid() -> str:
    return f"fp-{uuid.uuid4().hex[:12]}"


async def test_a_revoked_key_stops_opening_the_proxy_at_once(
    gw: Any, db: AsyncSession, settings: Settings
) -> None:
    client = gw
    row, headers = await _key(db, settings)
    sid = _sid()
    assert (await client.post(f"/sessions/{sid}/v1/chat/completions", json=CHAT, headers=headers)).status_code == 200
    await revoke_key(db, row.id)
    await db.commit()
    # The verifier cached the key on the first call; revoking clears that cache.
    refused = await client.post(f"/sessions/{sid}/v1/chat/completions", json=CHAT, headers=headers)
    assert refused.status_code == 401 and refused.json()["error"]["type"] == "authentication_error"


async def test_scopes_and_errors_match_the_routes(
    gw: Any, db: AsyncSession, settings: Settings
) -> None:
    client = gw
    _, processor = await _key(db, settings, "session", session_id="own")
    assert (await client.post("/sessions/own/v1/chat/completions", json=CHAT, headers=processor)).status_code == 200
    assert (await client.post("/sessions/own/attempts/2/v1/chat/completions", json=CHAT,
                              headers=processor)).status_code == 200
    other = await client.post("/sessions/other/v1/chat/completions", json=CHAT, headers=processor)
    plain = await client.post("/v1/chat/completions", json=CHAT, headers=processor)
    assert other.status_code == plain.status_code == 403
    # A missing key: the fast path's 401 is the body the routes' handler renders (GET goes to the routes).
    fast = await client.post("/sessions/own/v1/chat/completions", json=CHAT)
    routed = await client.get("/sessions/own/v1/models")
    assert fast.status_code == routed.status_code == 401 and fast.json() == routed.json()
    # What the fast path leaves to the routes is answered by them, as before.
    bad_attempt = await client.post("/sessions/own/attempts/x/v1/chat/completions", json=CHAT, headers=processor)
    assert bad_attempt.status_code == 400 and bad_attempt.json()["error"]["code"] == "validation_failed"


async def test_calls_are_traced_counted_by_route_and_carry_a_request_id(
    gw: Any, db: AsyncSession, settings: Settings
) -> None:
    client = gw
    row, headers = await _key(db, settings)
    route = "/sessions/{session_id}/attempts/{attempt}/v1/chat/completions"
    labels = {"service": "gateway", "method": "POST", "route": route, "status": "200"}
    before = REGISTRY.get_sample_value("trajforge_http_requests_total", labels) or 0.0
    sid = _sid()
    for _ in range(2):
        reply = await client.post(f"/sessions/{sid}/attempts/1/v1/chat/completions", json=CHAT,
                                  headers={**headers, "x-request-id": "rid-1"})
        assert reply.status_code == 200 and reply.headers["x-request-id"] == "rid-1"
    bad = await client.post(f"/sessions/{sid}/attempts/1/v1/chat/completions", json={"model": "nope", "messages": []},
                            headers=headers)
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "messages"
    assert REGISTRY.get_sample_value("trajforge_http_requests_total", labels) == before + 2
    traces = (await client.get(f"/v1/sessions/{sid}/traces", headers=headers)).json()
    assert [(t["attempt"], t["sequence"]) for t in traces] == [(1, 0), (1, 1)]
    assert {t["api_key_id"] for t in traces} == {row.id.hex} and traces[0]["request"] == CHAT


@pytest.fixture
async def gw_app(settings: Settings, upstreams: list[ServerThread], tmp_path: Path) -> AsyncIterator[Any]:
    """The gateway service app itself, started (for clients that reach it in this process)."""
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"upstreams": [{"model": "policy", "url": upstreams[0].url, "name": "a"}]}))
    app = create_app(SERVICE, settings=settings.model_copy(update={"gateway_config": str(config)}))
    async with app.router.lifespan_context(app):
        yield app


async def test_streamed_and_whole_answers_through_the_in_process_client_store_the_same_trace(
    gw_app: Any, db: AsyncSession, settings: Settings
) -> None:
    from shared.clients import Endpoint, GatewayClient

    _, headers = await _key(db, settings)
    client = GatewayClient(Endpoint("gateway", "http://gateway.internal", gw_app),
                           api_key=headers["authorization"].removeprefix("Bearer "))
    whole_sid, stream_sid = _sid(), _sid()
    body = {**CHAT, "return_token_ids": True}
    whole = await client.chat_completions(body, session_id=whole_sid)
    raw = await client.request("POST", f"{client.session_root(stream_sid)}/v1/chat/completions",
                               json={**body, "stream": True}, retry=False)
    events = [part.removeprefix("data: ") for part in raw.decode().split("\n\n") if part.startswith("data: ")]
    assert events[-1] == "[DONE]" and len(events) > 2  # every event came through, the end marker last
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == whole["choices"][0]["message"]["content"]
    plain, streamed = (await client.traces(whole_sid))[0], (await client.traces(stream_sid))[0]
    assert (plain["stream"], streamed["stream"]) == (False, True)
    for field in ("prompt_token_ids", "completion_token_ids", "logprobs", "finish_reason", "parse_statuses", "usage"):
        assert streamed[field] == plain[field], field
    assert streamed["response"]["choices"] == plain["response"]["choices"]
    await client.aclose()
