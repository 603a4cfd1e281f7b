"""The SDK's rollout methods and SSE following, against a small real server on loopback.

The stand-in app below speaks the rollout contract's paths and shapes (the
rollout service's own routes are tested with that service); it streams real
server-sent events over uvicorn, so the client's HTTP streaming and line
parsing run for real.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from shared.client import AsyncClient, Client, ServerEvent, parse_sse
from shared.errors import NotFound
from tests.conftest import LoopbackServer

JOB = str(uuid.uuid4())


def _job(status: str = "running") -> dict[str, Any]:
    return {"id": JOB, "status": status, "total_groups": 2, "done_groups": 0, "counts": {}}


async def _events() -> AsyncIterator[bytes]:
    progress = {"done_groups": 1, "total_groups": 2, "counts": {"stop_reason:stop": 3, "trajectories": 4}}
    yield b": keep-alive comment\n\n"
    yield f"event: progress\ndata: {json.dumps(progress)}\n\n".encode()
    await asyncio.sleep(0.05)  # separate network writes, so the client joins chunks for real
    yield b"event: group\r\ndata: {\"task_id\": \"t1\", \"group_id\": \"g1\",\r\ndata:  \"rewards\": [1.0, 0.0]}\r\n\r\n"
    yield b"event: end\ndata: {\"status\": \"succeeded\"}\n\n"
    yield b"event: progress\ndata: {\"after\": \"end\"}\n\n"  # never read: the client stops at end


def _stand_in() -> FastAPI:
    app = FastAPI()
    seen: list[Any] = []
    app.state.seen = seen

    @app.post("/v1/rollouts")
    async def create(request: Request) -> JSONResponse:
        seen.append(await request.json())
        return JSONResponse(_job("pending"), status_code=202)

    @app.get("/v1/rollouts/{job_id}")
    async def read(job_id: str) -> JSONResponse:
        if job_id != JOB:
            return JSONResponse({"status": 404, "code": "not_found", "detail": f"no rollout job {job_id}"},
                                status_code=404, media_type="application/problem+json")
        return JSONResponse(_job())

    @app.get("/v1/rollouts/{job_id}/trajectories")
    async def trajectories(request: Request) -> JSONResponse:
        seen.append(dict(request.query_params))
        return JSONResponse({"items": [{"id": "t0", "reward": 1.0}], "next_offset": None})

    @app.post("/v1/rollouts/{job_id}/cancel")
    async def cancel(job_id: str) -> JSONResponse:
        return JSONResponse(_job("cancelled"))

    @app.get("/v1/rollouts/{job_id}/export")
    async def export(format: str) -> Response:
        return Response(b"PAR1 bytes for " + format.encode(), media_type="application/vnd.apache.parquet")

    @app.get("/v1/rollouts/{job_id}/events")
    async def events(job_id: str, request: Request) -> Response:
        if job_id != JOB:
            return JSONResponse({"status": 404, "code": "not_found", "detail": "no such job"}, status_code=404,
                                media_type="application/problem+json")
        seen.append(request.headers.get("authorization"))
        return StreamingResponse(_events(), media_type="text/event-stream")

    return app


@pytest.fixture(scope="module")
def server() -> Any:
    with LoopbackServer(_stand_in()) as srv:
        yield srv


def test_iter_rollout_events_parses_the_stream_and_stops_at_end(server) -> None:
    with Client(server.url, api_key="tf_test") as client:
        events = list(client.iter_rollout_events(JOB))
    assert [e.event for e in events] == ["progress", "group", "end"]
    assert events[0].data["counts"]["stop_reason:stop"] == 3
    assert events[1].data == {"task_id": "t1", "group_id": "g1", "rewards": [1.0, 0.0]}
    assert events[2].data == {"status": "succeeded"}
    assert server.server.config.app.state.seen[-1] == "Bearer tf_test"


def test_events_of_an_unknown_job_raise_not_found(server) -> None:
    with Client(server.url) as client, pytest.raises(NotFound, match="no such job"):
        list(client.iter_rollout_events("nope"))


def test_rollout_endpoints_send_the_contract_requests(server) -> None:
    seen = server.server.config.app.state.seen
    with Client(server.url) as client:
        assert client.create_rollout({"tasks": [], "group_size": 2})["status"] == "pending"
        assert seen[-1] == {"tasks": [], "group_size": 2}
        assert client.rollout(JOB)["id"] == JOB
        page = client.rollout_trajectories(JOB, offset=5, limit=7)
        assert page["items"][0]["id"] == "t0" and seen[-1] == {"offset": "5", "limit": "7", "format": "json"}
        assert client.cancel_rollout(JOB)["status"] == "cancelled"
        assert client.export_rollout(JOB, format="jsonl") == b"PAR1 bytes for jsonl"
        with pytest.raises(NotFound):
            client.rollout("missing")


async def test_async_client_has_the_same_rollout_methods(server) -> None:
    async with AsyncClient(server.url) as client:
        assert (await client.rollout(JOB))["status"] == "running"
        assert await client.export_rollout(JOB) == b"PAR1 bytes for parquet"


def test_parse_sse_handles_comments_ids_multiline_data_and_a_cut_stream() -> None:
    lines = [": hello", "id: 7", "event: progress", 'data: {"a":', "data: 1}", "", "", "data: plain text",
             "", "event: group", 'data: {"b": 2}']
    assert list(parse_sse(lines)) == [ServerEvent("progress", {"a": 1}, "7"), ServerEvent("message", "plain text", "7"),
                                      ServerEvent("group", {"b": 2}, "7")]
