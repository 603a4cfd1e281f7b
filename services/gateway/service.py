"""Gateway service functions the routes (and later tasks) call."""

from __future__ import annotations

from pydantic import BaseModel

from services.gateway.config import GatewayConfig, UpstreamSpec
from services.gateway.metrics import record_merge
from services.gateway.proxy import GatewayProxy
from services.gateway.traces import InMemoryTraceSink, TraceSink
from services.gateway.upstreams import UpstreamClient, UpstreamPool
from shared.settings import DEFAULT_MAX_REQUEST_BYTES
from shared.traces import SessionMerge, TraceRecord, merge_session

__all__ = [
    "DrainStatus",
    "build_gateway",
    "drain",
    "resume",
    "session_traces",
    "session_trajectory",
    "set_upstreams",
]


class DrainStatus(BaseModel):
    """Drain state after a drain or resume request."""

    draining: bool
    inflight: int
    idle: bool


def build_gateway(
    config: GatewayConfig, *, sink: TraceSink | None = None, client: UpstreamClient | None = None,
    max_body_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
) -> GatewayProxy:
    """A gateway over a fresh upstream pool; traces go to ``sink`` (memory by default).

    ``max_body_bytes`` is the deployment's one body limit (``TRAJFORGE_MAX_REQUEST_BYTES``).
    """
    return GatewayProxy(UpstreamPool(config, client=client), sink or InMemoryTraceSink(),
                        max_body_bytes=max_body_bytes)


async def session_traces(gateway: GatewayProxy, session_id: str) -> list[TraceRecord]:
    """Every trace record of a session, in order."""
    return await gateway.sink.session(session_id)


async def session_trajectory(gateway: GatewayProxy, session_id: str) -> SessionMerge:
    """Merge a session's calls into token-exact segments and count the outcome."""
    merged = merge_session(session_id, await gateway.sink.session(session_id))
    record_merge(merged)
    return merged


async def drain(gateway: GatewayProxy, *, wait_s: float = 0.0) -> DrainStatus:
    """Refuse new calls; optionally wait up to ``wait_s`` for in-flight ones to finish."""
    gateway.pool.drain()
    idle = await gateway.pool.wait_idle(wait_s) if wait_s > 0 else gateway.pool.inflight == 0
    return DrainStatus(draining=True, inflight=gateway.pool.inflight, idle=idle)


def resume(gateway: GatewayProxy) -> DrainStatus:
    """Accept new calls again."""
    gateway.pool.resume()
    return DrainStatus(draining=False, inflight=gateway.pool.inflight, idle=gateway.pool.inflight == 0)


def set_upstreams(gateway: GatewayProxy, specs: list[UpstreamSpec]) -> list[UpstreamSpec]:
    """Replace the routed replicas (the API form of the config file)."""
    gateway.pool.set_upstreams(specs)
    return gateway.pool.config.upstreams
