"""The app factory: ops endpoints, request ids, one error format, body limits, safe JSON."""

from __future__ import annotations

import math
import uuid

import httpx
import pytest
from fastapi import APIRouter, Request
from pydantic import BaseModel

from shared.db.session import create_engine_for
from shared.errors import DatabaseNotMigrated, NotFound, RateLimited, UpstreamTimeout
from shared.web import ServiceSpec, create_app
from tests.conftest import create_database, drop_database

router = APIRouter()


class Echo(BaseModel):
    value: int


@router.post("/v1/echo")
async def echo(body: Echo) -> dict[str, int]:
    return {"value": body.value}


@router.post("/v1/raw")
async def raw(request: Request) -> dict[str, int]:
    return {"bytes": len(await request.body())}


@router.get("/v1/bad-text")
async def bad_text() -> dict[str, object]:
    return {"text": "ok\ud800", "score": math.nan, "inf": [math.inf]}


@router.get("/v1/missing")
async def missing() -> None:
    raise NotFound("no such thing")


@router.get("/v1/boom")
async def boom() -> None:
    raise RuntimeError("unexpected")


@router.post("/v1/chat/completions")
async def chat(body: Echo) -> dict[str, int]:
    raise UpstreamTimeout("upstream took too long", retry_after_s=3)


@router.get("/v1/models/{name}")
async def model(name: str) -> dict[str, str]:
    if name == "busy":
        raise RateLimited("slow down", retry_after_s=1.2)
    raise NotFound(f"no model {name}")

# Unique per run: two runs on one server must not drop each other's database.
_UNMIGRATED_DB = f"trajforge_test_unmigrated_{uuid.uuid4().hex[:8]}"

SPEC = ServiceSpec(name="probe", routers=[router])


async def test_health_ready_and_metrics(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SPEC, authenticated=False)
    assert (await client.get("/healthz")).json() == {"status": "ok", "services": ["probe"]}
    ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"]["database"] == "ok"
    metrics = await client.get("/metrics")
    assert metrics.status_code == 200 and "trajforge_http_requests_total" in metrics.text


async def test_request_id_is_echoed_or_made(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SPEC)
    assert (await client.get("/healthz", headers={"x-request-id": "abc-123"})).headers["x-request-id"] == "abc-123"
    made = (await client.get("/healthz", headers={"x-request-id": "bad id with spaces"})).headers["x-request-id"]
    assert len(made) == 32


async def test_validation_error_is_a_problem_document(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SPEC)
    resp = await client.post("/v1/echo", json={"value": "nope"})
    assert resp.status_code == 422
    assert resp.headers["content-type"].startswith("application/problem+json")
    body = resp.json()
    assert body["code"] == "validation_failed" and body["status"] == 422 and "value" in body["detail"]
    assert body["request_id"] == resp.headers["x-request-id"]


async def test_openai_paths_get_openai_shaped_errors(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SPEC)
    bad = await client.post("/v1/chat/completions", json={"value": "x"})
    assert bad.status_code == 400
    assert set(bad.json()["error"]) == {"message", "type", "param", "code"}
    timeout = await client.post("/v1/chat/completions", json={"value": 1})
    assert timeout.status_code == 504 and timeout.headers["retry-after"] == "3"
    assert timeout.json()["error"]["code"] == "upstream_timeout"


async def test_app_and_gateway_render_openai_errors_alike(make_client) -> None:  # type: ignore[no-untyped-def]
    """The app's handler and the gateway's proxy share one renderer: same 404 type, same Retry-After."""
    from shared.web.openai_errors import openai_error_response

    client = await make_client(SPEC)
    missing = await client.get("/v1/models/nope")
    direct = openai_error_response(NotFound("no model nope"))
    assert missing.status_code == direct.status_code == 404
    assert missing.json() == httpx.Response(404, content=direct.body).json()
    assert missing.json()["error"]["type"] == "invalid_request_error"
    busy = await client.get("/v1/models/busy")
    assert busy.status_code == 429 and busy.headers["retry-after"] == "2" and busy.headers["retry-after-ms"] == "1200"
    assert openai_error_response(RateLimited("x", retry_after_s=1.2)).headers["retry-after"] == "2"
    problem = await client.get("/v1/missing")
    assert problem.headers["content-type"].startswith("application/problem+json")


async def test_invalid_json_bodies_get_a_clear_400(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SPEC)
    headers = {"content-type": "application/json"}
    for body in (b'{"value": "\\ud800"}', b'{"value": NaN}', b"{trunc", b'{"v": "\xff"}'):
        resp = await client.post("/v1/echo", content=body, headers=headers)
        assert resp.status_code == 400, body
        assert resp.json()["code"] == "invalid_json"


async def test_bodies_over_the_limit_get_413(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SPEC, max_request_bytes=2048)
    resp = await client.post("/v1/echo", json={"value": 1, "pad": "x" * 5000})
    assert resp.status_code == 413 and resp.json()["code"] == "payload_too_large"

    async def chunks():  # type: ignore[no-untyped-def]
        for _ in range(10):
            yield b"x" * 1000

    streamed = await client.post("/v1/raw", content=chunks(), headers={"content-type": "application/x-ndjson"})
    assert streamed.status_code == 413
    small = await client.post("/v1/raw", content=b"x" * 100, headers={"content-type": "application/x-ndjson"})
    assert small.json() == {"bytes": 100}


async def test_bad_values_in_responses_never_give_500(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SPEC)
    resp = await client.get("/v1/bad-text")
    assert resp.status_code == 200
    assert resp.json() == {"text": "ok\ufffd", "score": None, "inf": [None]}


async def test_errors_from_the_tree_and_unhandled_ones(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SPEC)
    missing = await client.get("/v1/missing")
    assert missing.status_code == 404 and missing.json()["detail"] == "no such thing"
    no_route = await client.get("/v1/nothing-here")
    assert no_route.status_code == 404 and no_route.json()["code"] == "not_found"
    transport = httpx.ASGITransport(app=client.app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=client.headers) as raw:
        crashed = await raw.get("/v1/boom")
    assert crashed.status_code == 500 and crashed.json()["code"] == "internal_error"
    assert "unexpected" not in crashed.text  # internals stay in the log


async def test_app_refuses_to_start_on_an_unmigrated_database(settings) -> None:  # type: ignore[no-untyped-def]
    url = await create_database(_UNMIGRATED_DB)
    try:
        local = settings.model_copy(update={"database_url": url})
        app = create_app(SPEC, settings=local)
        with pytest.raises(DatabaseNotMigrated, match="trajforge db upgrade"):
            async with app.router.lifespan_context(app):
                pass
        engine = create_engine_for(local)
        await engine.dispose()
    finally:
        await drop_database(_UNMIGRATED_DB)


async def test_a_spec_prefix_applies_only_in_a_multi_service_app(make_client) -> None:  # type: ignore[no-untyped-def]
    prefixed = ServiceSpec(name="engine", routers=[router], prefix="/engine")
    alone = await make_client(prefixed)
    assert (await alone.post("/v1/echo", json={"value": 1})).json() == {"value": 1}
    both = await make_client([ServiceSpec(name="other"), prefixed])
    assert (await both.post("/engine/v1/echo", json={"value": 2})).json() == {"value": 2}
    assert (await both.post("/v1/echo", json={"value": 2})).status_code == 404
    paths = {route.path for r, _ in both.app.state.trajforge_routers for route in r.routes}
    assert "/engine/v1/echo" in paths
