"""Real loopback servers for gateway tests: two fake upstream replicas and the gateway."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi import FastAPI

from services.gateway.config import GatewayConfig, RetryPolicy, UpstreamSpec
from services.gateway.proxy import GatewayProxy
from services.gateway.routes import router
from services.gateway.service import build_gateway
from services.gateway.testing_upstream import ServerThread, make_upstream_app


@pytest.fixture(scope="session")
def upstream_servers() -> Iterator[list[ServerThread]]:
    servers = [ServerThread(make_upstream_app(name)).start() for name in ("a", "b")]
    yield servers
    for server in servers:
        server.stop()


@pytest.fixture()
def upstreams(upstream_servers: list[ServerThread]) -> list[ServerThread]:
    for server in upstream_servers:
        server.app.state.upstream.script.clear()
        server.app.state.upstream.requests.clear()
    return upstream_servers


@pytest.fixture(scope="session")
def gateway_app() -> FastAPI:
    app = FastAPI()
    app.include_router(router)
    return app


@pytest.fixture(scope="session")
def gateway_server(gateway_app: FastAPI) -> Iterator[ServerThread]:
    server = ServerThread(gateway_app).start()
    yield server
    server.stop()


@pytest.fixture()
def fast_config(upstreams: list[ServerThread]) -> Callable[..., GatewayConfig]:
    """Config over both replicas with millisecond retry backoff; keyword overrides apply."""

    def make(**overrides: Any) -> GatewayConfig:
        specs = [UpstreamSpec(model="policy", url=s.url, name=n) for s, n in zip(upstreams, "ab")]
        retry = RetryPolicy(max_attempts=3, base_s=0.01, max_backoff_s=0.05)
        return GatewayConfig.model_validate({"upstreams": specs, "retry": retry, **overrides})

    return make


@pytest.fixture()
def make_gateway(
    gateway_app: FastAPI, gateway_server: ServerThread, fast_config: Callable[..., GatewayConfig]
) -> Callable[..., GatewayProxy]:
    def make(config: GatewayConfig | None = None, **kwargs: Any) -> GatewayProxy:
        gateway = build_gateway(config or fast_config(), **kwargs)
        gateway_app.state.gateway = gateway
        return gateway

    return make


@pytest.fixture()
def gateway(make_gateway: Callable[..., GatewayProxy]) -> GatewayProxy:
    return make_gateway()
