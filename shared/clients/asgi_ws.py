"""WebSockets with one interface over two transports: a real socket, or an ASGI app in this process.

``NetworkWebSocket`` wraps the ``websockets`` asyncio client. ``ASGIWebSocket``
drives an ASGI app's ``websocket`` scope directly: the messages a server would
receive over a socket (``websocket.connect``, ``websocket.receive``,
``websocket.disconnect``) go into the app, and what it sends comes back, so the
server code that runs is the same as over the network, only the bytes never
touch a socket. A server that closes before accepting is refused the way an
HTTP 403 handshake refusal is.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Protocol
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

__all__ = ["ASGIWebSocket", "NetworkWebSocket", "WebSocketClosed", "WebSocketLike", "WebSocketRefused"]


class WebSocketClosed(Exception):
    """The connection is closed (by either side); ``code`` is the close code when known."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class WebSocketRefused(Exception):
    """The server refused the handshake (or could not be reached)."""


class WebSocketLike(Protocol):
    """What an OpenEnv session needs from a WebSocket."""

    async def open(self, timeout_s: float) -> None:
        """Connect (handshake) within ``timeout_s``."""
        ...

    async def send(self, text: str) -> None:
        """Send one text frame."""
        ...

    async def recv(self, timeout_s: float) -> str:
        """The next text frame; ``TimeoutError`` after ``timeout_s``; ``WebSocketClosed`` once closed."""
        ...

    async def close(self) -> None:
        """Close; never raises."""
        ...


class NetworkWebSocket:
    """A WebSocket to a URL (``ws://`` or ``wss://``)."""

    def __init__(self, url: str, *, headers: dict[str, str] | None = None, max_size: int = 100 * 1024 * 1024,
                 ping_interval_s: float | None = 20.0) -> None:
        self.url, self.headers = url, dict(headers or {})
        self.max_size, self.ping_interval_s = max_size, ping_interval_s
        self._ws: ClientConnection | None = None

    async def open(self, timeout_s: float) -> None:
        """Handshake within ``timeout_s``."""
        try:
            self._ws = await ws_connect(self.url, additional_headers=self.headers, open_timeout=timeout_s,
                                        max_size=self.max_size, ping_interval=self.ping_interval_s,
                                        ping_timeout=self.ping_interval_s)
        except (OSError, InvalidHandshake, InvalidURI, TimeoutError) as exc:
            raise WebSocketRefused(f"cannot open {self.url}: {exc}") from exc

    async def send(self, text: str) -> None:
        """Send one text frame."""
        if self._ws is None:
            raise WebSocketClosed("not connected")
        try:
            await self._ws.send(text)
        except ConnectionClosed as exc:
            raise WebSocketClosed(str(exc), exc.rcvd.code if exc.rcvd else None) from exc

    async def recv(self, timeout_s: float) -> str:
        """The next frame as text."""
        if self._ws is None:
            raise WebSocketClosed("not connected")
        try:
            message = await asyncio.wait_for(self._ws.recv(), timeout_s)
        except ConnectionClosed as exc:
            raise WebSocketClosed(str(exc), exc.rcvd.code if exc.rcvd else None) from exc
        return message if isinstance(message, str) else message.decode()

    async def close(self) -> None:
        """Close the socket (bounded: a dead peer does not hold the caller)."""
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), 2.0)


class ASGIWebSocket:
    """A WebSocket to an ASGI app in this process: the app's websocket scope, driven directly."""

    def __init__(self, app: Any, url: str, *, headers: dict[str, str] | None = None) -> None:
        parts = urlsplit(url)
        self.app, self.path, self.query = app, parts.path or "/", parts.query
        self.host = parts.netloc or "inproc"
        self.headers = dict(headers or {})
        self._to_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._from_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._closed: int | None = None

    def _scope(self) -> dict[str, Any]:
        headers = [(b"host", self.host.encode())]
        headers += [(k.lower().encode(), v.encode()) for k, v in self.headers.items()]
        return {"type": "websocket", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
                "scheme": "ws", "path": self.path, "raw_path": self.path.encode(), "root_path": "",
                "query_string": self.query.encode(), "headers": headers, "subprotocols": [],
                "client": ("127.0.0.1", 0), "server": (self.host, 80), "extensions": {}}

    async def _run(self) -> None:
        try:
            await self.app(self._scope(), self._to_app.get, self._from_app.put)
        except Exception:  # noqa: BLE001 - a crashed handler reads as an abnormal close, like over a socket
            await self._from_app.put({"type": "websocket.close", "code": 1011})
        finally:
            await self._from_app.put({"type": "websocket.close", "code": 1006})

    async def open(self, timeout_s: float) -> None:
        """Run the app's handler and wait for it to accept."""
        self._task = asyncio.create_task(self._run())
        await self._to_app.put({"type": "websocket.connect"})
        try:
            message = await asyncio.wait_for(self._from_app.get(), timeout_s)
        except TimeoutError as exc:
            await self.close()
            raise WebSocketRefused(f"in-process app did not accept {self.path} within {timeout_s} s") from exc
        if message["type"] != "websocket.accept":
            self._closed = int(message.get("code") or 1006)
            await self.close()
            raise WebSocketRefused(f"in-process app refused {self.path} (close code {self._closed})")

    async def send(self, text: str) -> None:
        """Hand one text frame to the app."""
        if self._closed is not None or self._task is None:
            raise WebSocketClosed("closed", self._closed)
        await self._to_app.put({"type": "websocket.receive", "text": text})

    async def recv(self, timeout_s: float) -> str:
        """The app's next frame as text."""
        if self._task is None:
            raise WebSocketClosed("not connected")
        if self._closed is not None and self._from_app.empty():
            raise WebSocketClosed("closed", self._closed)
        message = await asyncio.wait_for(self._from_app.get(), timeout_s)
        if message["type"] == "websocket.close":
            self._closed = int(message.get("code") or 1000)
            raise WebSocketClosed(f"closed by the app (code {self._closed})", self._closed)
        if message.get("text") is not None:
            return str(message["text"])
        return bytes(message.get("bytes") or b"").decode()

    async def close(self) -> None:
        """Tell the app the client went away; stop its handler if it does not end on its own."""
        task, self._task = self._task, None
        if self._closed is None:
            self._closed = 1000
        if task is None:
            return
        await self._to_app.put({"type": "websocket.disconnect", "code": 1000})
        try:
            await asyncio.wait_for(asyncio.shield(task), 2.0)
        except Exception:  # noqa: BLE001 - closing never raises (a timeout included)
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
