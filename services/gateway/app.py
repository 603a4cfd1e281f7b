"""The gateway service: app factory and its ServiceSpec for the all-in-one app.

At startup the gateway reads its upstreams from ``TRAJFORGE_GATEWAY_CONFIG``;
without one, ``TRAJFORGE_INFERENCE_URL`` (split deployments) makes the inference
service its one upstream; when both are empty (the embedded default) its one upstream is the local engine
of this process, reached in memory (``inproc://inference``) and loaded on the
first call, so ``trajforge up`` alone serves an OpenAI-compatible endpoint.
Trace records go to the database through a batching ``DbTraceSink``.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI

from services.gateway.config import GatewayConfig, UpstreamSpec, load_gateway_config
from services.gateway.dbsink import DbTraceSink
from services.gateway.fastpath import ProxyFastPath
from services.gateway.inproc import INPROC_SCHEME, InProcessClient
from services.gateway.routes import router
from services.gateway.service import build_gateway
from services.inference.app import create_engine_app
from services.inference.errors import ModelLoadError
from services.inference.service import EngineHolder, get_engine_holder
from shared.settings import Settings
from shared.web import AppState, ServiceSpec
from shared.web import create_app as _create_app

__all__ = ["LOCAL_UPSTREAM_URL", "SERVICE", "create_app", "embedded_config"]

log = logging.getLogger(__name__)
LOCAL_UPSTREAM_URL = f"{INPROC_SCHEME}://inference"


def embedded_config(model: str) -> GatewayConfig:
    """One upstream: the in-process local engine serving ``model``."""
    return GatewayConfig(upstreams=[UpstreamSpec(model=model, url=LOCAL_UPSTREAM_URL, name="local")])


def _holder_of(app: FastAPI) -> EngineHolder:
    # Resolved per call, so an engine swapped on the app (tests, a reload) is the one used.
    return app.dependency_overrides.get(get_engine_holder, get_engine_holder)()  # type: ignore[no-any-return]


def _config(app: FastAPI, settings: Settings) -> GatewayConfig:
    if settings.gateway_config:
        return load_gateway_config(settings.gateway_config)
    if settings.inference_url:  # split: the inference service is the upstream, no model in this process
        return GatewayConfig(upstreams=[UpstreamSpec(
            model=_holder_of(app).served_name, url=settings.inference_url.rstrip("/"), name="inference",
            api_key=settings.service_key or None)])
    try:
        return embedded_config(_holder_of(app).served_name)
    except ModelLoadError as exc:
        log.warning("no local model for the embedded gateway upstream: %s", exc)
        return GatewayConfig()


async def _start(app: FastAPI, state: AppState) -> None:
    s = state.settings
    sink = DbTraceSink(state.sessionmaker, queue_size=s.gateway_trace_queue_size,
                       batch_size=s.gateway_trace_batch_size, write_attempts=s.gateway_trace_write_attempts,
                       linger_s=s.gateway_trace_linger_s)
    sink.start()
    client = InProcessClient({"inference": create_engine_app(lambda: _holder_of(app))})
    app.state.gateway = build_gateway(_config(app, s), sink=sink, client=client,
                                      max_body_bytes=s.max_request_bytes)


async def _stop(app: FastAPI, state: AppState) -> None:
    gateway = getattr(app.state, "gateway", None)
    if gateway is None:
        return
    await gateway.sink.close()
    await gateway.pool.aclose()


SERVICE = ServiceSpec(name="gateway", routers=[router], startup=[_start], shutdown=[_stop], uses_redis=False,
                      middleware=[ProxyFastPath])


def create_app(settings: Settings | None = None) -> FastAPI:
    """The gateway service on its own."""
    return _create_app(SERVICE, settings=settings)
