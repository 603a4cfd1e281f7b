"""Host registered envs over the OpenEnv protocol: WebSocket sessions plus stateful HTTP.

One WebSocket connection is one session with its own env instance. Slots are
capped per process; when full, the socket is accepted, told
``CAPACITY_REACHED`` and closed with 1000 (as the reference does). An idle
reaper closes the env *and* the socket, so a slot really comes back. Keepalive
is the ASGI server's WebSocket ping (run uvicorn with a generous
``ws_ping_interval``/``ws_ping_timeout``); half-open sockets fail those pings
or hit the idle timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from pydantic import BaseModel, Field, ValidationError
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from services.envs.errors import SessionCapacityReached, SessionNotFound
from services.envs.registry import EnvRegistry, default_registry
from services.envs.sessions import EnvSession, SessionTable
from services.envs.wire import (
    ActionError,
    Envelope,
    WSErrorCode,
    error_frame,
    observation_frame,
    state_frame,
)
from shared.errors import AuthenticationError, EnvError, InvalidInput, ValidationFailed
from shared.settings import DEFAULT_MAX_REQUEST_BYTES

__all__ = ["OpenEnvServer", "ServerConfig"]

# Sync or async; returning False or raising AuthenticationError both mean "refused".
KeyVerifier = Callable[[str], bool | Awaitable[object]]
_WS_CLOSE_IDLE = 1001


class ServerConfig(BaseModel):
    """Limits of one hosting process."""

    max_sessions: int = Field(1024, ge=1)
    idle_timeout_s: float | None = Field(600.0, gt=0)
    #: Set from the one body limit (``TRAJFORGE_MAX_REQUEST_BYTES``) by the envs app.
    max_message_bytes: int = Field(DEFAULT_MAX_REQUEST_BYTES, ge=1024)


class OpenEnvServer:
    """Session table, WebSocket loop and HTTP session operations for all registered envs."""

    def __init__(
        self,
        registry: EnvRegistry | None = None,
        config: ServerConfig | None = None,
        *,
        verify_key: KeyVerifier | None = None,
    ) -> None:
        self.registry = registry or default_registry
        self.config = config or ServerConfig()
        # None means auth is off; the app supplies the real key check.
        self.verify_key = verify_key
        self.table = SessionTable(
            max_sessions=self.config.max_sessions, idle_timeout_s=self.config.idle_timeout_s
        )
        self._reaper: asyncio.Task[None] | None = None

    async def authorized(self, key: str | None) -> bool:
        """True when auth is off or the key passes ``verify_key``."""
        if self.verify_key is None:
            return True
        if not key:
            return False
        try:
            verdict: object = self.verify_key(key)
            if inspect.isawaitable(verdict):
                verdict = await verdict
        except AuthenticationError:
            return False
        return verdict is not False and verdict is not None

    def capacity_headers(self) -> list[tuple[bytes, bytes]]:
        """Active and maximum sessions, reported on every accepted connection."""
        return [
            (b"x-openenv-active-sessions", str(self.table.active).encode()),
            (b"x-openenv-max-sessions", str(self.table.max_sessions).encode()),
        ]

    # ---- WebSocket -------------------------------------------------------

    async def serve_ws(self, ws: WebSocket, name: str) -> None:
        """Run one WebSocket session on env ``name`` until close, disconnect or idle reap."""
        self._ensure_reaper()
        if not self.table.try_reserve():
            with contextlib.suppress(WebSocketDisconnect):
                await self._refuse_full(ws)
            return
        session: EnvSession | None = None
        try:
            await ws.accept(headers=self.capacity_headers())
            session = await self._open_or_report(ws, name)
            if session is not None:
                await self._loop(ws, session)
        except WebSocketDisconnect:
            pass  # the client left mid-send: an ordinary end of the session
        finally:
            # After an idle reap the session is already gone; release is then a no-op.
            await self.table.release(session)

    async def _refuse_full(self, ws: WebSocket) -> None:
        await ws.accept(headers=self.capacity_headers())
        msg = f"Server at capacity ({self.table.active}/{self.table.max_sessions} sessions)."
        frame = error_frame(
            WSErrorCode.CAPACITY_REACHED,
            msg,
            active_sessions=self.table.active,
            max_sessions=self.table.max_sessions,
        )
        await ws.send_text(frame)
        await ws.close(code=1000)

    async def _open_or_report(self, ws: WebSocket, name: str) -> EnvSession | None:
        try:
            session = await self.open_session(name, kind="ws")
        except Exception as exc:  # noqa: BLE001 - the env constructor is user code
            await ws.send_text(error_frame(WSErrorCode.FACTORY_ERROR, str(exc), factory_name=name))
            await ws.close(code=1000)
            return None
        session.closer = lambda: self._close_socket(ws, _WS_CLOSE_IDLE)
        return session

    async def open_session(self, name: str, *, kind: str) -> EnvSession:
        """Build an env on an already reserved slot and record the session."""
        spec = self.registry.spec(name)
        if getattr(spec.factory, "inline_safe", False):
            env = self.registry.get(name)
        else:
            env = await asyncio.to_thread(self.registry.get, name)
        session = EnvSession(name, env, kind=kind)
        self.table.add(session)
        return session

    async def _loop(self, ws: WebSocket, session: EnvSession) -> None:
        while not session.closed:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect" or session.closed:
                return
            text = message.get("text")
            if text is None:
                # Binary frames end the session, as in the reference server.
                await ws.send_text(error_frame(WSErrorCode.SESSION_ERROR, "'text'"))
                await self._close_socket(ws, 1000)
                return
            reply = await self.handle_text(session, text)
            if reply is None:
                await self._close_socket(ws, 1000)
                return
            await ws.send_text(reply)

    async def _close_socket(self, ws: WebSocket, code: int) -> None:
        if ws.application_state == WebSocketState.CONNECTED:
            with contextlib.suppress(RuntimeError, OSError):
                await ws.close(code=code)

    async def handle_text(self, session: EnvSession, text: str) -> str | None:
        """Answer one text frame; None means the client asked to close."""
        if len(text) > self.config.max_message_bytes:
            msg = f"Message of {len(text)} characters exceeds {self.config.max_message_bytes}."
            return error_frame(WSErrorCode.VALIDATION_ERROR, msg, errors=[])
        try:
            envelope = Envelope.model_validate(orjson.loads(text))
        except orjson.JSONDecodeError as exc:
            return error_frame(WSErrorCode.INVALID_JSON, f"Invalid JSON: {exc}")
        except ValidationError as exc:
            return error_frame(WSErrorCode.VALIDATION_ERROR, "Invalid message", errors=_errors(exc))
        if envelope.type == "close":
            return None
        async with session.lock:
            return await self._dispatch(session, envelope)

    async def _dispatch(self, session: EnvSession, envelope: Envelope) -> str:
        try:
            if envelope.type == "reset":
                return observation_frame(await session.reset(envelope.data or {}))
            if envelope.type == "step":
                if envelope.data is None:
                    return error_frame(WSErrorCode.VALIDATION_ERROR, "step needs data", errors=[])
                return observation_frame(await session.step(envelope.data))
            if envelope.type == "state":
                return state_frame(session.state())
        except ActionError as exc:
            return error_frame(WSErrorCode.VALIDATION_ERROR, "Invalid action", errors=exc.errors)
        except ValidationError as exc:
            return error_frame(
                WSErrorCode.VALIDATION_ERROR, "Invalid reset data", errors=_errors(exc)
            )
        except Exception as exc:  # noqa: BLE001 - env code failing is data for the client, not a dead socket
            return error_frame(WSErrorCode.EXECUTION_ERROR, str(exc))
        return error_frame(WSErrorCode.UNKNOWN_TYPE, f"Unknown message type: {envelope.type}")

    # ---- idle reaper -----------------------------------------------------

    def _ensure_reaper(self) -> None:
        if self.config.idle_timeout_s is None or (self._reaper and not self._reaper.done()):
            return
        self._reaper = asyncio.get_running_loop().create_task(self._reap_forever())

    async def _reap_forever(self) -> None:
        interval = max(min((self.config.idle_timeout_s or 1.0) / 4, 5.0), 0.05)
        while True:
            await asyncio.sleep(interval)
            await self.table.reap_idle()

    async def aclose(self) -> None:
        """Stop the reaper and close every session."""
        if self._reaper:
            self._reaper.cancel()
        for session in list(self.table.sessions.values()):
            closer = session.closer
            await self.table.release(session)
            if closer:
                await closer()

    # ---- HTTP sessions ---------------------------------------------------

    async def http_reset(
        self, name: str, data: dict[str, Any], session_id: str | None
    ) -> tuple[EnvSession, Any]:
        """Reset an existing HTTP session, or open a new one on a free slot."""
        self._ensure_reaper()
        session = (
            self.http_session(name, session_id)
            if session_id
            else await self._new_http_session(name)
        )
        async with session.lock:
            return session, await session.reset(data)

    async def _new_http_session(self, name: str) -> EnvSession:
        self.registry.spec(name)
        if not self.table.try_reserve():
            await self.table.reap_idle()
            if not self.table.try_reserve():
                msg = f"All {self.table.max_sessions} env sessions are in use; close one or retry later."
                raise SessionCapacityReached(msg, retry_after_s=1.0)
        try:
            return await self.open_session(name, kind="http")
        except BaseException:
            await self.table.release(None)
            raise

    def http_session(self, name: str, session_id: str | None) -> EnvSession:
        """The live HTTP session ``session_id`` of env ``name``."""
        if not session_id:
            raise InvalidInput(
                "HTTP step/state need the session_id returned by /reset.", param="session_id"
            )
        session = self.table.sessions.get(session_id)
        if session is None or session.name != name or session.kind != "http":
            raise SessionNotFound(
                f"No live session {session_id!r} for env {name!r}; it was closed or reaped. Call /reset."
            )
        return session

    async def http_step(
        self, name: str, session_id: str, action: dict[str, Any]
    ) -> tuple[EnvSession, Any]:
        """Step an HTTP session; a bad action is a 422, an env failure an env_error."""
        session = self.http_session(name, session_id)
        async with session.lock:
            try:
                return session, await session.step(action)
            except ActionError as exc:
                raise ValidationFailed("Invalid action", details={"errors": exc.errors}) from None
            except Exception as exc:  # env code; reported as an episode error, never a bare 500
                raise EnvError(f"The env failed: {exc}") from exc

    async def http_close(self, name: str, session_id: str) -> None:
        """Close an HTTP session and free its slot."""
        await self.table.release(self.http_session(name, session_id))


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [{k: e[k] for k in ("type", "loc", "msg", "input") if k in e} for e in exc.errors()]
