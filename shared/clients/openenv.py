"""An async OpenEnv client: one episode's WebSocket session plus the HTTP ``/schema`` and ``/health``.

It speaks to any OpenEnv server: the envs service (``http://host/envs/{name}``
or its capability URL ``.../envs/{name}/k/{key}``), or another implementation
such as an ``openenv-core`` server. The same class runs over the network or,
given the envs app of this process, in-process (``shared.clients.asgi_ws``).

Pairing is strict: one request, then exactly its reply. Any timeout, dropped
socket or unexpected frame discards the connection, so a late reply is never
read as the answer to a later request (no desync); the failed call raises and
the episode is lost. ``reset`` opens a fresh connection when there is none,
and reconnects once if the cached one died in between (nothing to lose yet);
opening retries with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
import orjson

from shared.clients.asgi_ws import ASGIWebSocket, NetworkWebSocket, WebSocketClosed, WebSocketLike, WebSocketRefused
from shared.errors import EnvError, UpstreamTimeout, UpstreamUnavailable
from shared.schema import StepResult

__all__ = ["OpenEnvSession", "parse_step_result", "ws_url_of"]


def ws_url_of(base_url: str) -> str:
    """The ``/ws`` URL of an OpenEnv base URL (http→ws, https→wss, path kept)."""
    url = base_url.rstrip("/")
    for src, dst in (("https://", "wss://"), ("http://", "ws://")):
        if url.startswith(src):
            url = dst + url[len(src):]
    if not url.startswith(("ws://", "wss://")):
        url = "ws://" + url
    return url + "/ws"


def parse_step_result(data: dict[str, Any]) -> StepResult:
    """A StepResult from an observation frame's data (a null reward reads as 0.0)."""
    return StepResult(observation=data.get("observation"), reward=float(data.get("reward") or 0.0),
                      done=bool(data.get("done", False)), info=dict(data.get("info") or {}))


class OpenEnvSession:
    """One OpenEnv session (one episode at a time) over a WebSocket; ``aclose`` ends it."""

    def __init__(self, base_url: str, *, app: Any = None, headers: dict[str, str] | None = None,
                 connect_timeout_s: float = 10.0, message_timeout_s: float = 60.0, max_reconnects: int = 3,
                 ping_interval_s: float | None = 20.0) -> None:
        self.base_url, self.app, self.headers = base_url.rstrip("/"), app, dict(headers or {})
        self.connect_timeout_s, self.message_timeout_s = connect_timeout_s, message_timeout_s
        self.max_reconnects, self.ping_interval_s = max_reconnects, ping_interval_s
        self._ws: WebSocketLike | None = None
        #: Connections opened so far (a test and the bench read it).
        self.connects = 0

    def _socket(self) -> WebSocketLike:
        url = ws_url_of(self.base_url)
        if self.app is not None:
            return ASGIWebSocket(self.app, url, headers=self.headers)
        return NetworkWebSocket(url, headers=self.headers, ping_interval_s=self.ping_interval_s)

    async def _open(self) -> None:
        for attempt in range(self.max_reconnects + 1):
            ws = self._socket()
            try:
                await ws.open(self.connect_timeout_s)
            except WebSocketRefused as exc:
                if attempt == self.max_reconnects:
                    raise UpstreamUnavailable(f"cannot connect to the env at {self.base_url}: {exc}") from exc
                await asyncio.sleep(min(0.1 * 2 ** attempt, 2.0))
                continue
            self._ws = ws
            self.connects += 1
            return

    async def _discard(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            await ws.close()

    async def _request(self, frame: dict[str, Any], *, expect: str) -> dict[str, Any]:
        if self._ws is None:
            raise UpstreamUnavailable("the env connection is gone; reset to start a new episode")
        try:
            await self._ws.send(orjson.dumps(frame).decode())
            reply = orjson.loads(await self._ws.recv(self.message_timeout_s))
        except TimeoutError as exc:
            await self._discard()
            raise UpstreamTimeout(f"the env sent no reply within {self.message_timeout_s} s; "
                                  "the connection was discarded") from exc
        except WebSocketClosed as exc:
            await self._discard()
            raise UpstreamUnavailable(f"the env server closed the connection ({exc}); the episode is lost") from exc
        except orjson.JSONDecodeError as exc:
            await self._discard()
            raise EnvError(f"the env sent a frame that is not JSON: {exc}") from exc
        if not isinstance(reply, dict):
            await self._discard()
            raise EnvError("the env sent a frame that is not a JSON object")
        data = reply.get("data") or {}
        if reply.get("type") == "error":
            raise EnvError(str(data.get("message") or "env error"), details=dict(data))
        if reply.get("type") != expect:
            await self._discard()
            raise EnvError(f"expected a {expect!r} frame from the env, got {reply.get('type')!r}; "
                           "the connection was discarded")
        return dict(data)

    async def reset(self, data: dict[str, Any] | None = None) -> StepResult:
        """Start an episode (``data``: seed, episode_id and env-specific reset keys)."""
        frame = {"type": "reset", "data": dict(data or {})}
        if self._ws is None:
            await self._open()
        try:
            return parse_step_result(await self._request(frame, expect="observation"))
        except UpstreamUnavailable:
            # The cached socket died since the last call: a reset can start over on a new one.
            await self._open()
            return parse_step_result(await self._request(frame, expect="observation"))

    async def step(self, action: dict[str, Any]) -> StepResult:
        """Send one action; its observation, reward and done flag."""
        return parse_step_result(await self._request({"type": "step", "data": action}, expect="observation"))

    async def state(self) -> dict[str, Any]:
        """The session's state (episode_id, step_count, env fields)."""
        return await self._request({"type": "state"}, expect="state")

    async def aclose(self) -> None:
        """Say goodbye (no reply expected) and drop the connection; never raises."""
        if self._ws is not None:
            with contextlib.suppress(WebSocketClosed):
                await self._ws.send('{"type":"close"}')
        await self._discard()

    async def schema(self, http: httpx.AsyncClient | None = None) -> dict[str, Any]:
        """The server's ``GET /schema`` (action, observation, state and, on ours, ``tools``)."""
        return await self._get_json("/schema", http)

    async def health(self, http: httpx.AsyncClient | None = None) -> dict[str, Any]:
        """The server's ``GET /health``."""
        return await self._get_json("/health", http)

    async def _get_json(self, path: str, http: httpx.AsyncClient | None) -> dict[str, Any]:
        own = http is None
        client = http or httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app) if self.app is not None else None,
            headers=self.headers, timeout=httpx.Timeout(self.message_timeout_s, connect=self.connect_timeout_s))
        try:
            resp = await client.get(self.base_url + path)
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(f"GET {path} of the env at {self.base_url} timed out") from exc
        except httpx.TransportError as exc:
            raise UpstreamUnavailable(f"cannot reach the env at {self.base_url}: {exc}") from exc
        finally:
            if own:
                await client.aclose()
        if resp.status_code >= 400:
            raise EnvError(f"GET {path} of the env at {self.base_url} answered {resp.status_code}: "
                           f"{resp.text[:300]}", details={"status": resp.status_code})
        body = resp.json()
        return dict(body) if isinstance(body, dict) else {}
