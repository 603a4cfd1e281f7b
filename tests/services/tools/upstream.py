"""A real local HTTP server standing in for a user's HTTP tool."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

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


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve_upstream() -> Iterator[str]:
    """Run ``upstream_app`` on a free loopback port; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(upstream_app, host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=5)
