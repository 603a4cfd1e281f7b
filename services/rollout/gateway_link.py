"""How a shard's rollout processors reach the gateway, and how the shard reads their traces back.

With ``public_base_url`` set, processors call that deployment over HTTP, else the
split gateway at ``TRAJFORGE_GATEWAY_URL``. Without either (the embedded default)
the gateway is the one the service clients reach in this process (its running app,
or one started for the block) and each processor gets an ``httpx.AsyncClient``
whose transport is that app, so no port is opened and nothing outside the process
can reach it.
Either way every call goes through the gateway's own code, which stores it as a
``gateway_trace`` row with the engine's token ids.

The shard reads traces with a ``user`` key it creates for itself; each
processor run gets a ``session`` key that opens only its own gateway session.
All of them are revoked when the shard ends. The submitting user's key is never
stored with the job, so nothing secret sits in the job's spec, and a leaked
processor key reaches nothing but the session it was made for.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shared.auth import create_key, revoke_key
from shared.clients import Endpoints
from shared.db.session import engine_of
from shared.settings import Settings
from shared.traces import TraceRecord

__all__ = ["GatewayLink", "open_gateway_link", "session_id_for"]

# Policy calls of a processor may take long on a CPU engine; the processor's own timeout bounds them.
_TIMEOUT = httpx.Timeout(600.0, connect=10.0)


_UNSAFE = re.compile(r"[^A-Za-z0-9._~-]")


def session_id_for(job_id: uuid.UUID | str, task_id: str, member: int, attempt: int) -> str:
    """The gateway session of one group member's run (a retried run reuses the same session).

    The id is one URL path segment: a task id with other characters (``org/dataset/32``) is
    spelled safely and tagged with a hash of the original, so two tasks never share a session.
    """
    safe = _UNSAFE.sub("_", task_id)
    if safe != task_id:
        safe = f"{safe}~{hashlib.sha1(task_id.encode()).hexdigest()[:8]}"
    return f"rollout-{job_id}-{safe}-{member}-{attempt}"


class GatewayLink:
    """Session URLs for processors, plus reads of what the gateway captured."""

    def __init__(self, root: str, api_key: str, client: httpx.AsyncClient,
                 transport: httpx.AsyncBaseTransport | None = None, *,
                 issue_key: Callable[[str], Awaitable[str]] | None = None) -> None:
        self.root = root.rstrip("/")
        self.api_key = api_key
        self._client = client
        self._transport = transport
        self._issue_key = issue_key

    async def session_key(self, session_id: str) -> str:
        """A key that opens only ``session_id`` (the shard's own key when none can be issued)."""
        return await self._issue_key(session_id) if self._issue_key is not None else self.api_key

    def session_url(self, session_id: str) -> str:
        """The OpenAI base URL whose calls are recorded under ``session_id``."""
        return f"{self.root}/sessions/{quote(session_id, safe='')}/v1"

    def http_client(self) -> httpx.AsyncClient | None:
        """A fresh client for one processor call when the gateway is in memory; None over the network.

        One per call, because an OpenAI client closes the httpx client it was given.
        """
        if self._transport is None:
            return None
        return httpx.AsyncClient(transport=self._transport, base_url=self.root, timeout=_TIMEOUT)

    async def default_model(self) -> str | None:
        """The first model the gateway serves, or None when it serves none or cannot say."""
        try:
            resp = await self._client.get("/v1/models")
            resp.raise_for_status()
            data = resp.json().get("data") or []
        except (httpx.HTTPError, ValueError):
            return None
        return str(data[0]["id"]) if data else None

    async def traces(self, session_id: str) -> list[TraceRecord]:
        """Every call the gateway stored for the session, in order (the gateway flushes first)."""
        resp = await self._client.get(f"/v1/sessions/{quote(session_id, safe='')}/traces")
        resp.raise_for_status()
        return [TraceRecord.model_validate(r) for r in resp.json()]


@contextlib.asynccontextmanager
async def open_gateway_link(settings: Settings, maker: async_sessionmaker[AsyncSession],
                            *, key_name: str, network: bool = False) -> AsyncIterator[GatewayLink]:
    """A link to the gateway for the duration of the block, authenticated by a shard-scoped key.

    With ``network`` the session URLs must be reachable from other processes (function-component
    workers): the deployment's URL, else the split gateway's, else a loopback server for the
    in-process gateway, run for the block.
    """
    key_id, key = await _create_key(settings, maker, key_name)
    issued = [key_id]

    async def issue(session_id: str) -> str:
        sid, session_key = await _create_key(settings, maker, f"{key_name}:session", session_id=session_id)
        issued.append(sid)
        return session_key

    headers = {"authorization": f"Bearer {key}"}
    root = settings.public_base_url or settings.gateway_url
    try:
        if root:
            async with httpx.AsyncClient(base_url=root, headers=headers, timeout=_TIMEOUT) as client:
                yield GatewayLink(root, key, client, issue_key=issue)
        else:
            async with Endpoints(settings, engine=engine_of(maker), sessionmaker=maker) as endpoints:
                gateway = await endpoints.get("gateway")
                if network:
                    async with _loopback(gateway.app) as url, \
                            httpx.AsyncClient(base_url=url + urlsplit(gateway.base_url).path, headers=headers,
                                              timeout=_TIMEOUT) as client:
                        yield GatewayLink(str(client.base_url), key, client, issue_key=issue)
                else:
                    transport = gateway.transport()
                    async with httpx.AsyncClient(transport=transport, base_url=gateway.base_url, headers=headers,
                                                 timeout=_TIMEOUT) as client:
                        yield GatewayLink(gateway.base_url, key, client, transport, issue_key=issue)
    finally:
        for issued_id in issued:
            await _revoke_key(maker, issued_id)


async def _create_key(settings: Settings, maker: async_sessionmaker[AsyncSession], name: str, *,
                      session_id: str | None = None) -> tuple[uuid.UUID, str]:
    async with maker() as session:
        if session_id is None:
            row, key = await create_key(session, name, salt=settings.key_salt)
        else:
            row, key = await create_key(session, name, salt=settings.key_salt, scope="session",
                                        session_id=session_id)
        await session.commit()
        return row.id, key


async def _revoke_key(maker: async_sessionmaker[AsyncSession], key_id: uuid.UUID) -> None:
    async with maker() as session:
        await revoke_key(session, key_id)
        await session.commit()


@contextlib.asynccontextmanager
async def _loopback(app: Any) -> AsyncIterator[str]:
    """Serve ``app`` on a free loopback port for the block (its lifespan is the caller's); yields its URL."""
    import socket

    import uvicorn

    from shared.web.server import server_config

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(server_config(app, lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()  # raises why it did not start
            await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()
