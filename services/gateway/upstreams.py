"""Upstream pool: replicas per model, sticky sessions, least-loaded picks, retries, drain.

Only the OpenAI paths in ``ALLOWED_PATHS`` ever reach an upstream: vLLM's control
endpoints (pause, sleep, weight transfer, collective RPC) are unauthenticated
there, so the gateway refuses to forward anything else.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from services.gateway.config import GatewayConfig, UpstreamSpec
from services.gateway.errors import PathNotAllowed, UnknownModel
from services.gateway.http1 import ConnectFailed, Http1Client, Http1Error, Http1Response, ReadTimedOut
from services.gateway.inproc import AsgiResponse, InProcessClient
from services.gateway.retry import is_retryable_status, retry_delay_s
from shared.aio import wait_event
from shared.errors import Draining, UpstreamError, UpstreamTimeout, UpstreamUnavailable

#: What the pool sends through: HTTP/1.1 only, or in-process apps plus HTTP/1.1.
UpstreamClient = Http1Client | InProcessClient

__all__ = ["ALLOWED_PATHS", "Replica", "UpstreamClient", "UpstreamPool", "UpstreamReply", "check_path"]

_JSON = {"content-type": "application/json"}
ALLOWED_PATHS: frozenset[str] = frozenset(
    {"/v1/chat/completions", "/v1/completions", "/v1/models", "/tokenize"}
)


def check_path(path: str) -> None:
    """Refuse any path that is not on the upstream allow-list."""
    if path not in ALLOWED_PATHS:
        raise PathNotAllowed(f"Path {path!r} is not forwarded upstream.", param="path")


@dataclass
class Replica:
    """One upstream replica and its live load."""

    spec: UpstreamSpec
    inflight: int = 0
    served: int = 0

    @property
    def id(self) -> str:
        """The replica id used for stickiness and traces."""
        return self.spec.replica_id


@dataclass
class UpstreamReply:
    """What one upstream call produced, after retries."""

    replica: Replica
    status: int
    headers: dict[str, str]
    retries: int
    body: bytes = b""
    stream: Http1Response | AsgiResponse | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class UpstreamPool:
    """Routes calls to replicas per model and retries transient failures."""

    def __init__(self, config: GatewayConfig, *, client: UpstreamClient | None = None) -> None:
        self.config = config
        self.client = client or Http1Client()
        self._replicas: dict[str, list[Replica]] = {}
        self._sticky: OrderedDict[str, str] = OrderedDict()
        self._inflight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.draining = False
        self.set_upstreams(config.upstreams)

    # -- configuration -------------------------------------------------
    def set_upstreams(self, specs: list[UpstreamSpec]) -> None:
        """Replace the replica set, keeping live counters of replicas that stay."""
        old = {r.id: r for group in self._replicas.values() for r in group}
        fresh: dict[str, list[Replica]] = {}
        for spec in specs:
            kept = old.get(spec.replica_id)
            replica = Replica(spec, inflight=kept.inflight if kept else 0)
            fresh.setdefault(spec.model, []).append(replica)
        self._replicas = fresh
        self.config = self.config.model_copy(update={"upstreams": list(specs)})

    def models(self) -> list[str]:
        """Public model names, sorted."""
        return sorted(self._replicas)

    def replicas(self, model: str) -> list[Replica]:
        """Replicas of one model, or ``UnknownModel``."""
        group = self._replicas.get(model)
        if not group:
            raise UnknownModel(f"The model {model!r} does not exist on this gateway.", param="model")
        return group

    # -- drain ---------------------------------------------------------
    def drain(self) -> None:
        """Refuse new calls (503 + Retry-After) while in-flight ones finish."""
        self.draining = True

    def resume(self) -> None:
        """Accept new calls again."""
        self.draining = False

    async def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no call is in flight; False on timeout."""
        return await wait_event(self._idle, timeout_s)

    @property
    def inflight(self) -> int:
        """Calls currently in flight across all replicas."""
        return self._inflight

    # -- picking -------------------------------------------------------
    def pick(self, model: str, session_id: str | None, *, avoid: str | None = None) -> Replica:
        """Sticky replica for the session, else the least-loaded one."""
        group = self.replicas(model)
        if session_id is not None and avoid is None:
            sticky = self._sticky.get(session_id)
            for replica in group:
                if replica.id == sticky:
                    self._sticky.move_to_end(session_id)
                    return replica
        candidates = [r for r in group if r.id != avoid] or group
        chosen = min(candidates, key=lambda r: (r.inflight, r.served))
        if session_id is not None:
            self._remember(session_id, chosen.id)
        return chosen

    def _remember(self, session_id: str, replica_id: str) -> None:
        self._sticky[session_id] = replica_id
        self._sticky.move_to_end(session_id)
        if len(self._sticky) > self.config.max_sticky_sessions:
            self._sticky.popitem(last=False)

    def begin(self, replica: Replica) -> None:
        """Count a call as in flight; refuse it while draining."""
        if self.draining:
            raise Draining(
                "The gateway is draining for a weight update; retry shortly.",
                retry_after_s=self.config.drain_retry_after_s,
            )
        replica.inflight += 1
        replica.served += 1
        self._inflight += 1
        self._idle.clear()

    def end(self, replica: Replica) -> None:
        """Count a call as finished."""
        replica.inflight -= 1
        self._inflight -= 1
        if self._inflight == 0:
            self._idle.set()

    # -- sending -------------------------------------------------------
    async def send(
        self, replica: Replica, path: str, body: bytes, *, stream: bool = False
    ) -> UpstreamReply:
        """POST ``body`` to the replica with retries; a stream reply is left open."""
        check_path(path)
        policy = self.config.retry
        last: BaseException | None = None
        for attempt in range(policy.max_attempts):
            try:
                reply = await self._try_once(replica, path, body, stream=stream)
            except Http1Error as exc:
                last = exc
                if attempt + 1 < policy.max_attempts:
                    await asyncio.sleep(retry_delay_s(attempt, policy))
                continue
            reply.retries = attempt
            if not is_retryable_status(reply.status) or attempt + 1 == policy.max_attempts:
                return reply
            await self._discard(reply)
            await asyncio.sleep(retry_delay_s(attempt, policy, reply.headers))
        raise _transport_error(last, replica, policy.max_attempts)

    async def _try_once(
        self, replica: Replica, path: str, body: bytes, *, stream: bool
    ) -> UpstreamReply:
        spec = replica.spec
        sent = time.perf_counter()
        response = await self.client.request(
            "POST",
            spec.url.rstrip("/") + path,
            body=body,
            headers=_headers(spec),
            timeout_s=spec.timeout_s,
            connect_timeout_s=spec.connect_timeout_s,
            stream=stream,
        )
        if stream and response.status_code == 200:
            return UpstreamReply(replica, 200, response.headers, 0, stream=response)
        if stream:
            await response.aread()
            await response.aclose()
        upstream_ms = (time.perf_counter() - sent) * 1000
        return UpstreamReply(
            replica, response.status_code, response.headers, 0, body=response.content,
            extra={"upstream_ms": upstream_ms},
        )

    @staticmethod
    async def _discard(reply: UpstreamReply) -> None:
        if reply.stream is not None:
            await reply.stream.aclose()

    async def get(self, replica: Replica, path: str) -> UpstreamReply:
        """GET an allow-listed path from one replica (no retries: listing is cheap to redo)."""
        check_path(path)
        try:
            response = await self.client.request("GET", replica.spec.url.rstrip("/") + path)
        except Http1Error as exc:
            raise _transport_error(exc, replica, 1) from exc
        return UpstreamReply(replica, response.status_code, response.headers, 0, body=response.content)

    async def aclose(self) -> None:
        """Close the pooled upstream connections."""
        await self.client.aclose()


def _headers(spec: UpstreamSpec) -> dict[str, str]:
    if spec.api_key:
        return {**_JSON, "authorization": f"Bearer {spec.api_key}"}
    return _JSON


def _transport_error(exc: BaseException | None, replica: Replica, attempts: int) -> UpstreamError:
    where = f"upstream {replica.id} after {attempts} attempt(s)"
    if isinstance(exc, ReadTimedOut):
        return UpstreamTimeout(f"Timed out waiting for {where}.")
    if isinstance(exc, ConnectFailed):
        return UpstreamUnavailable(f"Could not connect to {where}.")
    return UpstreamError(f"Transport failure talking to {where}: {exc!r}.")
