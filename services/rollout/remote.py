"""Tool executors backed by other services: an OpenEnv server's env, and the tools service.

- ``RemoteEnv``: an env reached over OpenEnv: any server at ``env.base_url``, or an env of the
  envs service by ``env.name`` through its client (its URL when set, its app in this process
  otherwise: one code path either way).
- ``OpenEnvExecutor``: one OpenEnv WebSocket session per trajectory (reset when
  the episode starts, every tool call one step, closed when it ends). A step's
  calls run one at a time in call order (one session answers one request at a
  time). The env's own tools are offered, or one tool mapped onto its action
  schema (``ActionSpec``). An error frame (a bad action) is an observation; a
  lost connection or a step past its timeout discards the session (a late
  reply can never be read as a later answer) and ends the trajectory with the
  cause recorded (``fatal_error``, read by the episode loop).
- ``ToolsServiceExecutor``: tools by name from the tools service, run there. The
  calls of every trajectory that arrive together (one event-loop pass) go in one
  ``/v1/tools/call_batch`` request; if the service cannot be reached each call
  becomes a tool-error observation.
- ``ServiceLink``: the service clients one shard uses, authenticated by a key
  the shard creates for itself and revokes when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.rollout.ports import ToolResult
from services.rollout.schemas import ActionSpec, EnvSpec
from shared.auth import create_key, revoke_key
from shared.clients import (
    Endpoints,
    EnvsClient,
    FunctionsClient,
    GatewayClient,
    OpenEnvSession,
    RewardClient,
    ServiceClient,
    ToolsClient,
)
from shared.db.session import engine_of
from shared.errors import EnvError, NotFound, TrajforgeError, UpstreamError, ValidationFailed
from shared.schema import StepResult, Trajectory, to_observation_text
from shared.settings import Settings

__all__ = ["OpenEnvExecutor", "RemoteEnv", "ServiceLink", "ToolsServiceExecutor", "open_service_link"]

_MAX_BATCH = 256


def _arguments(raw: Any) -> dict[str, Any]:
    value = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
    if not isinstance(value, dict):
        raise ValueError("tool arguments must be a JSON object")
    return value


_NO_GUARD: Callable[[], contextlib.AbstractAsyncContextManager[None]] = contextlib.nullcontext


class RemoteEnv:
    """What a shard learns about an OpenEnv env once: how to open a session, and the tools to show.

    ``discover`` reads any OpenEnv server at ``env.base_url``; ``of_service`` reads an env of the
    envs service by ``env.name`` through its client (over its URL, or its app in this process).
    """

    def __init__(self, spec: EnvSpec, tools: list[dict[str, Any]], action: ActionSpec | None,
                 open_session: Callable[[], OpenEnvSession], *,
                 guard: Callable[[], contextlib.AbstractAsyncContextManager[None]] = _NO_GUARD) -> None:
        self.spec, self.tools, self.action, self.open_session, self.guard = spec, tools, action, open_session, guard

    @classmethod
    async def discover(cls, spec: EnvSpec, headers: dict[str, str]) -> RemoteEnv:
        """Read the server's ``/schema``: its tools, or one tool over its action schema."""
        assert spec.base_url is not None
        base_url = spec.base_url
        probe = OpenEnvSession(base_url, headers=headers, message_timeout_s=spec.message_timeout_s)
        try:
            schema = await probe.schema()
        except UpstreamError as exc:
            raise UpstreamError(f"env.base_url {base_url}: {exc.message}") from exc
        tools, action = _tools_of(spec, schema)
        return cls(spec, tools, action, lambda: OpenEnvSession(base_url, headers=headers,
                                                               message_timeout_s=spec.message_timeout_s))

    @classmethod
    async def of_service(cls, spec: EnvSpec, client: EnvsClient, *,
                         guard: Callable[[], contextlib.AbstractAsyncContextManager[None]] = _NO_GUARD
                         ) -> RemoteEnv:
        """Env ``spec.name`` of the envs service: its ``/schema`` now, one session per trajectory later.

        ``guard`` is held while a session opens (its key is checked then; see ``ServiceLink.guard``).
        """
        assert spec.name is not None
        name = spec.name
        try:
            async with guard():
                schema = await client.schema(name)
        except NotFound:
            raise ValidationFailed(f"the envs service hosts no env named {name!r}", param="env.name") from None
        tools, action = _tools_of(spec, schema)
        return cls(spec, tools, action, lambda: client.session(name, message_timeout_s=spec.message_timeout_s),
                   guard=guard)

    def executor(self, trajectory: Trajectory) -> OpenEnvExecutor:
        """A fresh session for one trajectory (opened when its episode starts)."""
        reset: dict[str, Any] = dict(self.spec.kwargs)
        task = trajectory.metadata.get("env_task")
        if isinstance(task, dict):
            reset.update(task)
        seed = trajectory.metadata.get("env_seed")
        if isinstance(seed, int):
            reset["seed"] = seed
        return OpenEnvExecutor(self.open_session(), trajectory, self.tools, action=self.action, reset=reset,
                               guard=self.guard)


def _tools_of(spec: EnvSpec, schema: dict[str, Any]) -> tuple[list[dict[str, Any]], ActionSpec | None]:
    """The server's own tools, or one tool over its action schema (``spec.action`` or the default)."""
    own = [t for t in schema.get("tools") or [] if isinstance(t, dict)]
    if own and spec.action is None:
        return own, None
    action = spec.action or ActionSpec.model_validate({})
    params = action.parameters or _parameters_of(schema.get("action"))
    if action.field:
        params = {"type": "object", "properties": {action.field: params}, "required": [action.field]}
    tool = {"type": "function", "function": {"name": action.tool_name, "description": action.description,
                                             "parameters": params}}
    return [tool], action


def _parameters_of(action_schema: Any) -> dict[str, Any]:
    """An action JSON schema as tool parameters (``$defs`` kept; a bare schema becomes an object)."""
    if not isinstance(action_schema, dict) or not action_schema:
        return {"type": "object", "properties": {}}
    keep = {k: v for k, v in action_schema.items() if k not in ("title",)}
    if keep.get("type") != "object" and "anyOf" not in keep and "oneOf" not in keep:
        return {"type": "object", "properties": {}}
    return keep


class OpenEnvExecutor:
    """One OpenEnv session for one trajectory; the running reward lands on the trajectory."""

    def __init__(self, session: OpenEnvSession, trajectory: Trajectory, tools: list[dict[str, Any]], *,
                 action: ActionSpec | None, reset: dict[str, Any],
                 guard: Callable[[], contextlib.AbstractAsyncContextManager[None]] = _NO_GUARD) -> None:
        self.session, self.trajectory, self.tools, self.action, self.reset = session, trajectory, tools, action, reset
        self.guard = guard
        self.names = [str((t.get("function") or {}).get("name") or "") for t in tools]
        self._lock = asyncio.Lock()
        self._total = 0.0
        #: Set when the session is lost: the episode loop ends the trajectory with it.
        self.fatal_error: TrajforgeError | None = None

    def tool_infos(self) -> list[dict[str, Any]]:
        """The tools shown to the policy (the server's, or the one mapped onto its actions)."""
        return [dict(t) for t in self.tools]

    async def astart(self) -> None:
        """Open the session and reset the episode (raises when the server cannot be reached)."""
        async with self.guard():
            result = await self.session.reset(self.reset)
        self._record(result, first=True)

    async def call(self, tool_call: dict[str, Any]) -> ToolResult:
        """One step; a bad call or an error frame is an observation, a lost session ends the episode."""
        fn = tool_call.get("function") or {}
        name = str(fn.get("name") or "")
        if name not in self.names:
            return ToolResult(ok=False, error_type="unknown_tool",
                              content=f"Error: unknown tool {name!r}; available: {', '.join(self.names)}")
        try:
            args = _arguments(fn.get("arguments"))
        except ValueError as exc:
            return ToolResult(ok=False, error_type="invalid_arguments", content=f"Error: {exc}")
        async with self._lock:
            if self.fatal_error is not None or self.episode_done:
                return ToolResult(ok=False, error_type="episode_over", content="Error: the episode is over.")
            try:
                result = await self.session.step(self._action(name, args))
            except EnvError as exc:  # the server refused this action: the model sees why and may retry
                return ToolResult(ok=False, error_type="env_error", content=f"Error: {exc.message}")
            except TrajforgeError as exc:
                self.fatal_error = exc
                return ToolResult(ok=False, error_type=exc.code, content=f"Error: {exc.message}")
            except BaseException:
                # Cancelled mid-step (the tool timeout): the reply may still come, so the session is gone.
                self.fatal_error = UpstreamError("the env step was cancelled before its reply; session discarded")
                raise
        self._record(result)
        # The step's own reward rides on the result: per-step advantages read it from each turn.
        return ToolResult(content=to_observation_text(result.observation), reward=float(result.reward or 0.0))

    def _action(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        if self.action is None:
            return {"tool_name": name, "arguments": args}
        if self.action.field:
            return dict(args.get(self.action.field) or {})
        return args

    @property
    def episode_done(self) -> bool:
        """True once a step ended the env's episode (the trajectory stops there)."""
        return bool(self.trajectory.metadata.get("env_done"))

    def _record(self, result: StepResult, *, first: bool = False) -> None:
        meta = self.trajectory.metadata
        if not first:
            self._total += float(result.reward)
        meta["env_reward"], meta["env_done"] = self._total, bool(result.done) and not first
        if result.info:
            meta["env_info"] = dict(result.info)
        meta["env_steps"] = meta.get("env_steps", -1) + 1

    async def aclose(self) -> None:
        """Close the session (never raises)."""
        with contextlib.suppress(Exception):
            await self.session.aclose()


class ToolsServiceExecutor:
    """Tools of the tools service, run there; calls arriving together go in one batch request."""

    def __init__(self, client: ToolsClient, tools: list[dict[str, Any]], *, timeout_s: float | None,
                 guard: Any = None) -> None:
        self.client, self.tools, self.timeout_s = client, tools, timeout_s
        self.guard = guard or (lambda _client: contextlib.nullcontext())
        self.names = {str((t.get("function") or {}).get("name")) for t in tools}
        self._pending: list[tuple[dict[str, Any], asyncio.Future[ToolResult]]] = []
        self._flusher: asyncio.Task[None] | None = None
        #: Batch requests sent (a test and the bench read it).
        self.batches = 0

    @classmethod
    async def discover(cls, client: ToolsClient, names: list[str], *, timeout_s: float | None,
                       guard: Any = None) -> ToolsServiceExecutor:
        """The named tools from the service's listing (a name it does not offer is a 422)."""
        offered = {t.function.name: t for t in await client.list_tools()}
        missing = [n for n in names if n not in offered]
        if missing:
            raise ValidationFailed(f"the tools service offers no tool named {missing}; it offers: "
                                   f"{', '.join(sorted(offered))}", param="tools")
        infos = [offered[n].model_dump(mode="json", exclude_none=True) for n in names]
        return cls(client, infos, timeout_s=timeout_s, guard=guard)

    def tool_infos(self) -> list[dict[str, Any]]:
        """Schemas of the job's tools, as the service lists them."""
        return [dict(t) for t in self.tools]

    async def call(self, tool_call: dict[str, Any]) -> ToolResult:
        """Queue the call for the next batch and wait for its own outcome."""
        name = str((tool_call.get("function") or {}).get("name") or "")
        if name not in self.names:
            return ToolResult(ok=False, error_type="unknown_tool",
                              content=f"Error: unknown tool {name!r}; available: {', '.join(sorted(self.names))}")
        future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        self._pending.append((tool_call, future))
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        await asyncio.sleep(0)  # let the other calls of this pass join the batch
        batch, self._pending, self._flusher = self._pending[:_MAX_BATCH], self._pending[_MAX_BATCH:], None
        if self._pending:
            self._flusher = asyncio.create_task(self._flush())
        live = [(c, f) for c, f in batch if not f.done()]
        if not live:
            return
        self.batches += 1
        try:
            async with self.guard(self.client):
                outcomes = await self.client.call_batch([c for c, _ in live], timeout_s=self.timeout_s)
            results = [ToolResult(content=o.content, ok=o.status == "ok", error_type=o.error_kind) for o in outcomes]
        except TrajforgeError as exc:
            results = [ToolResult(ok=False, error_type=exc.code, content=f"Error: the tools service failed: "
                                  f"{exc.message}")] * len(live)
        for (_, future), result in zip(live, results, strict=False):
            if not future.done():
                future.set_result(result.model_copy())


class ServiceLink:
    """The service clients of one shard, sharing one key and one set of endpoints."""

    def __init__(self, settings: Settings, endpoints: Endpoints, api_key: str,
                 db_lock: asyncio.Lock | None = None) -> None:
        self.settings, self.endpoints, self.api_key, self.db_lock = settings, endpoints, api_key, db_lock
        self._clients: dict[str, Any] = {}

    @contextlib.asynccontextmanager
    async def guard(self, client: ServiceClient) -> AsyncIterator[None]:
        """Hold the shard's database lock around a call to an app in this process.

        Such an app checks the key on the shard's own sessionmaker, which may be one connection
        (tests, SQLite): its queries must not interleave with the shard's. Over a URL nothing is held.
        """
        if self.db_lock is None or not client.endpoint.in_process:
            yield
            return
        async with self.db_lock:
            yield

    async def tools(self) -> ToolsClient:
        """The tools service's client."""
        if "tools" not in self._clients:
            self._clients["tools"] = await ToolsClient.open(self.endpoints, api_key=self.api_key)
        client: ToolsClient = self._clients["tools"]
        return client

    async def gateway(self) -> GatewayClient:
        """The gateway's client: the job's policy calls (each stored as a trace) and its teacher."""
        if "gateway" not in self._clients:
            self._clients["gateway"] = await GatewayClient.open(self.endpoints, api_key=self.api_key)
        client: GatewayClient = self._clients["gateway"]
        return client

    async def envs(self) -> EnvsClient:
        """The envs service's client (its OpenEnv sessions carry the shard's key)."""
        if "envs" not in self._clients:
            self._clients["envs"] = await EnvsClient.open(self.endpoints, api_key=self.api_key)
        client: EnvsClient = self._clients["envs"]
        return client

    async def reward(self) -> RewardClient:
        """The reward service's client."""
        if "reward" not in self._clients:
            self._clients["reward"] = await RewardClient.open(self.endpoints, api_key=self.api_key)
        client: RewardClient = self._clients["reward"]
        return client

    async def functions(self) -> FunctionsClient:
        """The functions service's client."""
        if "functions" not in self._clients:
            self._clients["functions"] = await FunctionsClient.open(self.endpoints, api_key=self.api_key)
        client: FunctionsClient = self._clients["functions"]
        return client

    def env_headers(self, base_url: str) -> dict[str, str]:
        """The shard's key as a bearer header, only for this deployment's own envs service."""
        own = self.settings.envs_url
        if own and _origin(own) == _origin(base_url):
            return {"authorization": f"Bearer {self.api_key}"}
        return {}  # another server: never send our key there (our capability URLs carry their own)

    async def aclose(self) -> None:
        """Close every client."""
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return scheme, parts.netloc


@contextlib.asynccontextmanager
async def open_service_link(settings: Settings, maker: async_sessionmaker[AsyncSession], *, key_name: str,
                            db_lock: asyncio.Lock | None = None) -> AsyncIterator[ServiceLink]:
    """Clients of the other services for the block, authenticated by a key revoked at its end.

    ``db_lock`` is the caller's lock over its sessionmaker (which may be one connection: tests,
    SQLite); the key's writes and every in-process app's key checks take it.
    """
    lock = db_lock or asyncio.Lock()
    async with lock, maker() as session:
        row, key = await create_key(session, key_name, salt=settings.key_salt)
        await session.commit()
        key_id: uuid.UUID = row.id
    endpoints = Endpoints(settings, engine=engine_of(maker), sessionmaker=maker)
    link = ServiceLink(settings, endpoints, key, db_lock)
    try:
        yield link
    finally:
        await link.aclose()
        await endpoints.aclose()
        async with lock, maker() as session:
            await revoke_key(session, key_id)
            await session.commit()
