"""OpenEnv as a seed ``Env``: a real WebSocket client of any OpenEnv server, or an in-process env.

Remote mode speaks the wire protocol over one WebSocket per episode. Any
timeout or dropped socket discards the connection (a late reply is never read
as the answer to a later request) and fails the call with an episode error;
the next ``reset`` reconnects, with retries and backoff.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import orjson
from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.sync.client import ClientConnection, connect

from services.envs.base import Env
from services.envs.errors import (
    EnvConnectionLost,
    EnvRemoteError,
    EnvTimeout,
    SessionCapacityReached,
)
from services.envs.openenv_local import LocalBackend, load_class
from services.envs.wire import parse_result
from shared.errors import InvalidInput
from shared.schema import StepResult

__all__ = ["OpenEnv", "tool_call_action", "ws_url"]

ActionMapper = Callable[[str, dict[str, Any]], dict[str, Any]]


def tool_call_action(tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Action mapper for trajforge-hosted envs: send the tool call itself."""
    return {"tool_name": tool_name, "arguments": arguments}


def ws_url(base_url: str) -> str:
    """The ``/ws`` URL of an OpenEnv base URL (http→ws, https→wss, prefix path kept)."""
    url = base_url.rstrip("/")
    for src, dst in (("https://", "wss://"), ("http://", "ws://")):
        if url.startswith(src):
            url = dst + url[len(src) :]
    if not url.startswith(("ws://", "wss://")):
        url = "ws://" + url
    return url + "/ws"


class _Channel:
    """One WebSocket with strict request/reply pairing; discarded on any fault."""

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str],
        connect_timeout_s: float,
        message_timeout_s: float,
        ping_interval_s: float | None,
        max_reconnects: int,
    ) -> None:
        self.url, self.headers = url, headers
        self.connect_timeout_s, self.message_timeout_s = connect_timeout_s, message_timeout_s
        self.ping_interval_s, self.max_reconnects = ping_interval_s, max_reconnects
        self.ws: ClientConnection | None = None
        self.connects = 0

    def open(self) -> None:
        """Connect, retrying with exponential backoff."""
        for attempt in range(self.max_reconnects + 1):
            try:
                self.ws = connect(
                    self.url,
                    additional_headers=self.headers,
                    open_timeout=self.connect_timeout_s,
                    ping_interval=self.ping_interval_s,
                    ping_timeout=self.ping_interval_s,
                    max_size=100 * 1024 * 1024,
                )
                self.connects += 1
                return
            except (OSError, InvalidHandshake, TimeoutError) as exc:
                if attempt == self.max_reconnects:
                    raise EnvConnectionLost(f"Cannot connect to {self.url}: {exc}") from exc
                time.sleep(min(0.1 * 2**attempt, 2.0))

    def discard(self) -> None:
        """Drop the socket so no stale reply can ever be read from it."""
        ws, self.ws = self.ws, None
        if ws is not None:
            ws.close()

    def request(self, frame: dict[str, Any], *, expect: str) -> dict[str, Any]:
        """Send one frame and read exactly its reply; raise an episode error on any fault."""
        if self.ws is None:
            raise EnvConnectionLost("No open connection; call reset() to start a new episode.")
        try:
            self.ws.send(orjson.dumps(frame).decode())
            reply = orjson.loads(self.ws.recv(timeout=self.message_timeout_s))
        except TimeoutError as exc:
            self.discard()
            raise EnvTimeout(
                f"No reply within {self.message_timeout_s} s; the connection was discarded."
            ) from exc
        except ConnectionClosed as exc:
            last = self._last_words()
            self.discard()
            if last is not None and last.get("type") == "error":
                return self._unwrap(last, expect)
            raise EnvConnectionLost(
                f"The env server closed the connection ({exc}); the episode is lost."
            ) from exc
        return self._unwrap(reply, expect)

    def _last_words(self) -> dict[str, Any] | None:
        # A server that refuses a session (e.g. CAPACITY_REACHED) sends one frame then closes;
        # that frame may still be buffered after our send failed.
        try:
            return dict(orjson.loads(self.ws.recv(timeout=0))) if self.ws else None
        except (ConnectionClosed, TimeoutError, orjson.JSONDecodeError):
            return None

    def _unwrap(self, reply: dict[str, Any], expect: str) -> dict[str, Any]:
        data = reply.get("data") or {}
        if reply.get("type") == "error":
            if data.get("code") == "CAPACITY_REACHED":
                self.discard()
                raise SessionCapacityReached(str(data.get("message")), details=data)
            raise EnvRemoteError(str(data.get("message")), details=data)
        if reply.get("type") != expect:
            self.discard()
            raise EnvConnectionLost(
                f"Expected a {expect!r} frame, got {reply.get('type')!r}; connection discarded."
            )
        return dict(data)


_CLIENT_OPTIONS = {"connect_timeout_s", "message_timeout_s", "ping_interval_s", "max_reconnects", "api_key"}


def _client_options(env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """``env_kwargs`` of the remote form: options of this client (unknown keys are refused, not dropped)."""
    unknown = sorted(set(env_kwargs) - _CLIENT_OPTIONS)
    if unknown:
        raise InvalidInput(f"env_kwargs {unknown} are not options of the remote OpenEnv client; it takes "
                           f"{', '.join(sorted(_CLIENT_OPTIONS))} (the server builds its env itself)",
                           param="env_kwargs")
    return dict(env_kwargs)


def _action_class(env_cls: str | type) -> type:
    """The remote form's ``env_cls``: a pydantic action model every step is validated against."""
    cls = load_class(env_cls) if isinstance(env_cls, str) else env_cls
    if not (isinstance(cls, type) and hasattr(cls, "model_validate") and hasattr(cls, "model_dump")):
        raise InvalidInput(f"env_cls {env_cls!r} of a remote OpenEnv must be a pydantic action model "
                           "(its fields are the server's action)", param="env_cls")
    return cls


class OpenEnv(Env):
    """An OpenEnv env as a seed Env: remote over WebSocket (``base_url``) or in-process (``env_cls``).

    Remote form: ``env_kwargs`` configure this client (``message_timeout_s``, ``connect_timeout_s``,
    ``ping_interval_s``, ``max_reconnects``, ``api_key``) and ``env_cls`` (a pydantic action model,
    or its dotted path) types the actions: each step is validated against it before it is sent.
    In-process form: ``env_cls(**env_kwargs)`` is the env itself.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        env_cls: str | type | None = None,
        env_kwargs: dict[str, Any] | None = None,
        tool_schema: list[dict[str, Any]] | None = None,
        action_mapper: ActionMapper | None = None,
        action_cls: type | None = None,
        api_key: str | None = None,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float = 60.0,
        ping_interval_s: float | None = 20.0,
        max_reconnects: int = 3,
    ) -> None:
        if base_url is None and env_cls is None:
            raise InvalidInput(
                "OpenEnv needs base_url (remote server) or env_cls (in-process env)."
            )
        self.tool_schema = list(tool_schema or [])
        self.action_mapper = action_mapper
        self._local = (
            LocalBackend(env_cls, env_kwargs or {}, action_cls)
            if base_url is None and env_cls
            else None
        )
        if base_url is not None:
            # Remote form (the seed's): env_kwargs configure this client, env_cls types its actions.
            options = _client_options(env_kwargs or {})
            api_key = options.pop("api_key", api_key)
            connect_timeout_s = options.get("connect_timeout_s", connect_timeout_s)
            message_timeout_s = options.get("message_timeout_s", message_timeout_s)
            ping_interval_s = options.get("ping_interval_s", ping_interval_s)
            max_reconnects = int(options.get("max_reconnects", max_reconnects))
            self.action_cls: Any = _action_class(env_cls) if env_cls is not None else action_cls
        else:
            self.action_cls = action_cls
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.channel = _Channel(
            ws_url(base_url or "local"),
            headers=headers,
            connect_timeout_s=connect_timeout_s,
            message_timeout_s=message_timeout_s,
            ping_interval_s=ping_interval_s,
            max_reconnects=max_reconnects,
        )

    def reset(self, trajectory: Any = None, *, seed: int | None = None) -> StepResult:
        """Start an episode, reusing a live connection or reconnecting (once more if it just died)."""
        if self._local is not None:
            return self._local.reset(trajectory, seed)
        data: dict[str, Any] = dict(trajectory) if isinstance(trajectory, dict) else {}
        if seed is not None:
            data["seed"] = seed
        frame = {"type": "reset", "data": data}
        if self.channel.ws is None:
            self.channel.open()
        try:
            return parse_result(self.channel.request(frame, expect="observation"))
        except EnvConnectionLost:
            # The cached socket was closed by the far end since the last call: a reset may
            # safely start over on a new connection (there is no episode to lose yet).
            self.channel.open()
            return parse_result(self.channel.request(frame, expect="observation"))

    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        """Map the tool call to an action and step the env."""
        args = dict(arguments or {})
        action = self.action_mapper(tool_name, args) if self.action_mapper else args
        if self._local is not None:
            return self._local.step(tool_name, action)
        if self.action_cls is not None:  # a typed action: checked here, sent as the fields it dumps
            try:
                action = self.action_cls.model_validate(action).model_dump(mode="json", exclude_none=True)
            except ValueError as exc:
                raise InvalidInput(f"action does not fit {self.action_cls.__name__}: {exc}",
                                   param="arguments") from None
        return parse_result(
            self.channel.request({"type": "step", "data": action}, expect="observation")
        )

    def state(self) -> dict[str, Any]:
        """The remote session state (episode_id, step_count, env fields)."""
        if self._local is not None:
            return {}
        return self.channel.request({"type": "state"}, expect="state")

    def tools(self) -> list[dict[str, Any]]:
        """The tool schemas given at construction."""
        return [dict(t) for t in self.tool_schema]

    def close(self) -> None:
        """Say goodbye to the server (no reply expected) and drop the socket."""
        if self._local is not None:
            self._local.close()
            return
        ws = self.channel.ws
        if ws is not None:
            with contextlib.suppress(ConnectionClosed):
                ws.send('{"type":"close"}')
        self.channel.discard()
