"""The gateway service: app factory and its ServiceSpec for the all-in-one app.

At startup the gateway reads its upstreams from ``TRAJFORGE_GATEWAY_CONFIG``;
without one, ``TRAJFORGE_INFERENCE_URL`` (split deployments) makes the inference
service its one upstream; when both are empty (the embedded default) its one upstream is the local engine
of this process, reached in memory (``inproc://inference``) and loaded on the
first call, so ``trajforge up`` alone serves an OpenAI-compatible endpoint.
The engine app is not the gateway's: the composition offers it on the gateway's app
(``shared.web.inproc``; the inference spec does, and ``trajforge serve gateway`` adds it),
``inproc://<name>`` upstreams resolve there at call time, and the gateway asks it, over
that in-process wire, which model name it answers to (no model load).
Trace records go to the database through a batching ``DbTraceSink``.
"""

from __future__ import annotations

import json
import logging

from fastapi import FastAPI

from services.gateway.config import GatewayConfig, UpstreamSpec, load_gateway_config
from services.gateway.dbsink import DbTraceSink
from services.gateway.fastpath import ProxyFastPath
from services.gateway.inproc import INPROC_SCHEME, InProcessClient
from services.gateway.routes import router
from services.gateway.service import build_gateway
from shared.local_model import served_model_name
from shared.settings import Settings
from shared.web import AppState, ServiceSpec
from shared.web import create_app as _create_app
from shared.web.inproc import in_process_apps

__all__ = ["LOCAL_ENGINE", "LOCAL_UPSTREAM_URL", "SERVICE", "create_app", "embedded_config"]

log = logging.getLogger(__name__)
#: The in-process app name of the local engine (offered by the inference service).
LOCAL_ENGINE = "inference"
LOCAL_UPSTREAM_URL = f"{INPROC_SCHEME}://{LOCAL_ENGINE}"


def embedded_config(model: str) -> GatewayConfig:
    """One upstream: the in-process local engine serving ``model``."""
    return GatewayConfig(upstreams=[UpstreamSpec(model=model, url=LOCAL_UPSTREAM_URL, name="local")])


async def _config(app: FastAPI, settings: Settings, client: InProcessClient) -> GatewayConfig:
    if settings.gateway_config:
        return load_gateway_config(settings.gateway_config)
    if settings.inference_url:  # split: the inference service is the upstream, no model in this process
        return GatewayConfig(upstreams=[UpstreamSpec(
            model=served_model_name(settings), url=settings.inference_url.rstrip("/"), name="inference",
            api_key=settings.service_key or None)])
    if LOCAL_ENGINE not in in_process_apps(app):
        log.warning("the gateway has no upstream: set TRAJFORGE_INFERENCE_URL or TRAJFORGE_GATEWAY_CONFIG, "
                    "PUT /v1/gateway/upstreams, or serve it with the local engine (`trajforge serve gateway`)")
        return GatewayConfig()
    return await _local_config(client)


async def _local_config(client: InProcessClient) -> GatewayConfig:
    """The offered local engine as the one upstream, under the name it says it answers to."""
    resp = await client.request("GET", f"{LOCAL_UPSTREAM_URL}/served_model", timeout_s=60.0)
    if resp.status_code != 200:  # its error body names the cause (no model package, a bad path)
        log.warning("no local model for the embedded gateway upstream: %s", resp.content.decode(errors="replace"))
        return GatewayConfig()
    return embedded_config(json.loads(resp.content)["model"])


async def _start(app: FastAPI, state: AppState) -> None:
    s = state.settings
    sink = DbTraceSink(state.sessionmaker, queue_size=s.gateway_trace_queue_size,
                       batch_size=s.gateway_trace_batch_size, write_attempts=s.gateway_trace_write_attempts,
                       linger_s=s.gateway_trace_linger_s)
    sink.start()
    client = InProcessClient(in_process_apps(app))
    app.state.gateway = build_gateway(await _config(app, s, client), sink=sink, client=client,
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
