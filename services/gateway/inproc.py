"""Upstream calls into an ASGI app in this process (the embedded default's local engine).

An upstream URL ``inproc://<name>/...`` names an app in the mapping given to
``InProcessClient`` (the apps offered on the gateway's app, ``shared.web.inproc``),
looked up at call time; every other URL goes to the network client. The app runs
as a task fed by an in-memory ASGI channel, so streamed responses arrive event
by event as on a socket, and the gateway's retry, trace and error paths stay
the same. Failures map onto the network client's kinds: an app that raises
before answering is a connect failure, one that raises mid-body a protocol
failure.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, MutableMapping
from typing import Any, cast
from urllib.parse import urlsplit

from services.gateway.body import StreamedBody
from services.gateway.http1 import ConnectFailed, Http1Client, ProtocolFailure, ReadTimedOut

__all__ = ["INPROC_SCHEME", "AsgiResponse", "InProcessClient"]

INPROC_SCHEME = "inproc"
Message = MutableMapping[str, Any]
AsgiApp = Callable[[Message, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]
_END = {"type": "inproc.end"}


class AsgiResponse(StreamedBody):
    """Status, lower-cased headers and the body of an in-process call (read whole or by line)."""

    def __init__(self, status: int, headers: dict[str, str], channel: _Channel, read_timeout_s: float) -> None:
        self.status_code = status
        self.headers = headers
        self.content = b""
        self._channel = channel
        self._timeout_s = read_timeout_s

    async def iter_raw(self) -> AsyncIterator[bytes]:
        """Body bytes as the app sends them."""
        while True:
            message = await self._channel.next(self._timeout_s)
            if message.get("type") != "http.response.body":
                raise ProtocolFailure(f"in-process upstream ended mid-body: {self._channel.failure!r}")
            if message.get("body"):
                yield bytes(message["body"])
            if not message.get("more_body", False):
                return

    async def aclose(self) -> None:
        """Tell the app the client went away and stop it if it still runs."""
        await self._channel.close()


class _Channel:
    """One ASGI exchange: the request body in, response messages out, through a queue."""

    def __init__(self, app: AsgiApp, scope: Message, body: bytes) -> None:
        self._outbox: asyncio.Queue[Message] = asyncio.Queue()
        self._disconnected = asyncio.Event()
        self._body: bytes | None = body
        self.failure: BaseException | None = None
        # ASGI apps are coroutine functions; the alias only promises an awaitable.
        run = cast(Coroutine[Any, Any, None], app(scope, self._receive, self._outbox.put))
        self._task: asyncio.Task[None] = asyncio.create_task(run)
        self._task.add_done_callback(self._on_done)

    def _on_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled():
            self.failure = task.exception()
        self._outbox.put_nowait(_END)

    async def _receive(self) -> Message:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self._disconnected.wait()
        return {"type": "http.disconnect"}

    async def next(self, timeout_s: float) -> Message:
        """The app's next message, or ``_END`` once it has returned or failed."""
        try:
            async with asyncio.timeout(timeout_s):
                return await self._outbox.get()
        except TimeoutError as exc:
            raise ReadTimedOut(f"in-process upstream sent nothing within {timeout_s} s") from exc

    async def close(self) -> None:
        """Signal disconnect, then cancel the app if it does not stop by itself."""
        self._disconnected.set()
        if not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def _scope(method: str, path: str, query: str, headers: dict[str, str], body: bytes) -> Message:
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    raw.append((b"content-length", str(len(body)).encode()))
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "method": method, "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": query.encode(), "headers": raw, "client": ("127.0.0.1", 0), "server": ("inproc", 80),
    }


class InProcessClient:
    """The gateway's upstream client: ``inproc://<name>`` to the apps in ``apps``, the rest over HTTP/1.1."""

    def __init__(self, apps: Mapping[str, AsgiApp], *, network: Http1Client | None = None) -> None:
        self.apps = apps
        self.network = network or Http1Client()

    async def request(
        self, method: str, url: str, *, body: bytes = b"", headers: dict[str, str] | None = None,
        timeout_s: float = 600.0, connect_timeout_s: float = 5.0, stream: bool = False,
    ) -> Any:
        """Send one request; unless ``stream``, the body is read whole."""
        parts = urlsplit(url)
        if parts.scheme != INPROC_SCHEME:
            return await self.network.request(method, url, body=body, headers=headers, timeout_s=timeout_s,
                                              connect_timeout_s=connect_timeout_s, stream=stream)
        app = self.apps.get(parts.hostname or "")
        if app is None:
            raise ConnectFailed(f"no in-process upstream named {parts.hostname!r} is offered in this app")
        channel = _Channel(app, _scope(method, parts.path or "/", parts.query, headers or {}, body), body)
        response = await _start(channel, timeout_s)
        if not stream:
            try:
                await response.aread()
            finally:
                await response.aclose()
        return response

    async def aclose(self) -> None:
        """Close pooled network connections."""
        await self.network.aclose()


async def _start(channel: _Channel, timeout_s: float) -> AsgiResponse:
    try:
        first = await channel.next(timeout_s)
    except BaseException:
        await channel.close()
        raise
    if first.get("type") != "http.response.start":
        await channel.close()
        raise ConnectFailed(f"in-process upstream failed before answering: {channel.failure!r}")
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in first.get("headers", [])}
    return AsgiResponse(int(first["status"]), headers, channel, timeout_s)
