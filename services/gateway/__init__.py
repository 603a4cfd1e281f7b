"""OpenAI-compatible gateway: routing to upstream replicas and token-exact trace capture."""

from services.gateway.config import GatewayConfig, RateLimitPolicy, RetryPolicy, UpstreamSpec, load_gateway_config
from services.gateway.proxy import CallContext, GatewayProxy
from services.gateway.service import build_gateway
from services.gateway.traces import InMemoryTraceSink, TraceSink
from services.gateway.upstreams import ALLOWED_PATHS, UpstreamPool

__all__ = [
    "ALLOWED_PATHS",
    "CallContext",
    "GatewayConfig",
    "GatewayProxy",
    "InMemoryTraceSink",
    "RateLimitPolicy",
    "RetryPolicy",
    "TraceSink",
    "UpstreamPool",
    "UpstreamSpec",
    "build_gateway",
    "load_gateway_config",
]
