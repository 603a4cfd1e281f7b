"""The /v1/tools routes over ASGI (auth and error rendering are the app factory's job)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from services.tools.routes import router
from services.tools.service import build_default_service
from shared.sandbox.pool import SandboxPool
from tests.services.tools.upstream import serve_upstream


@pytest.fixture
async def client(pool: SandboxPool) -> AsyncIterator[httpx.AsyncClient]:
    """A bare app with only the tool router mounted."""
    app = FastAPI()
    app.include_router(router)
    app.state.tool_service = build_default_service(pool)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test"
    ) as http:
        yield http


async def test_list_tools_returns_openai_schemas(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/tools")
    assert response.status_code == 200
    tools = response.json()["tools"]
    assert [t["function"]["name"] for t in tools] == [
        "python",
        "bash",
        "calculator",
        "memory_search",
        "memory_write",
    ]
    assert all(t["type"] == "function" and "parameters" in t["function"] for t in tools)


async def test_call_one_tool(client: httpx.AsyncClient) -> None:
    call = {
        "id": "c9",
        "type": "function",
        "function": {"name": "python", "arguments": '{"code": "print(7*6)"}'},
    }
    response = await client.post("/v1/tools/call", json={"tool_call": call, "session_id": "s1"})
    body = response.json()
    assert response.status_code == 200
    assert (body["tool_call_id"], body["name"], body["status"], body["error_kind"]) == (
        "c9",
        "python",
        "ok",
        None,
    )
    assert "42" in body["content"] and body["latency_s"] > 0


async def test_malformed_call_is_a_per_call_error_not_a_422(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/tools/call", json={"tool_call": "garbage"})
    assert response.status_code == 200 and response.json()["error_kind"] == "invalid_call"


async def test_batch(client: httpx.AsyncClient) -> None:
    calls = [
        {"id": "1", "function": {"name": "calculator", "arguments": {"expression": "2**8"}}},
        {
            "id": "2",
            "function": {"name": "bash", "arguments": {"code": "sleep 3", "timeout_s": 0.3}},
        },
    ]
    response = await client.post("/v1/tools/call_batch", json={"tool_calls": calls})
    results = response.json()["results"]
    assert [(r["status"], r["error_kind"]) for r in results] == [("ok", None), ("error", "timeout")]
    assert results[0]["content"] == "256"


async def test_batch_size_is_bounded(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/tools/call_batch", json={"tool_calls": [{}] * 257})
    assert response.status_code == 422


async def test_register_http_tool_and_call_it(client: httpx.AsyncClient) -> None:
    with serve_upstream() as base_url:
        spec = {"name": "greet", "url": f"{base_url}/text", "parameters": {"type": "object"}}
        registered = await client.post("/v1/tools/register", json=spec)
        call = {"id": "g", "function": {"name": "greet", "arguments": {"name": "Lu"}}}
        called = await client.post("/v1/tools/call", json={"tool_call": call})
    assert registered.status_code == 201 and registered.json()["function"]["name"] == "greet"
    assert called.json()["content"] == "hello Lu"
    listed = await client.get("/v1/tools")
    assert "greet" in [t["function"]["name"] for t in listed.json()["tools"]]
