"""A real local HTTP server standing in for a user's HTTP tool."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

from tests.conftest import LoopbackServer

upstream_app = FastAPI()


@upstream_app.post("/weather")
async def weather(body: dict[str, Any]) -> dict[str, Any]:
    """Echo a JSON answer built from the arguments."""
    return {"city": body.get("city"), "temp_c": 21, "noise": "x" * 10}


@upstream_app.post("/text")
async def text(body: dict[str, Any]) -> PlainTextResponse:
    """Plain-text answer."""
    return PlainTextResponse(f"hello {body.get('name')}")


@upstream_app.post("/fail")
async def fail(body: dict[str, Any]) -> PlainTextResponse:
    """Server error."""
    return PlainTextResponse("broken", status_code=500)


@upstream_app.post("/slow")
async def slow(body: dict[str, Any]) -> dict[str, Any]:
    """Answers after two seconds."""
    await asyncio.sleep(2)
    return {}


@contextmanager
def serve_upstream() -> Iterator[str]:
    """Run ``upstream_app`` on a free loopback port; yields its base URL."""
    with LoopbackServer(upstream_app) as server:
        yield server.url
