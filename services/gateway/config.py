"""Gateway configuration: upstream replicas per model, retry, rate-limit and size policies."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from pydantic import BaseModel, Field

__all__ = ["GatewayConfig", "RateLimitPolicy", "RetryPolicy", "UpstreamRead", "UpstreamSpec", "load_gateway_config"]


class UpstreamSpec(BaseModel):
    """One upstream replica serving one model name."""

    model: str
    url: str
    name: str | None = None
    # Name the upstream itself expects, when it differs from the public model name.
    served_model: str | None = None
    # vLLM extension fields; off for upstreams that reject unknown fields.
    return_token_ids: bool = True
    logprobs: bool = True
    timeout_s: float = Field(600.0, gt=0)
    connect_timeout_s: float = Field(5.0, gt=0)
    weight_version: str | None = None
    # Bearer key the upstream expects (vLLM --api-key); never the client's own key.
    api_key: str | None = Field(None, repr=False)

    @property
    def replica_id(self) -> str:
        """Stable id of the replica (its name, else its URL)."""
        return self.name or self.url.rstrip("/")


class UpstreamRead(BaseModel):
    """An upstream as the API shows it: everything but the secret, which is only said to be set."""

    model: str
    url: str
    name: str | None = None
    served_model: str | None = None
    return_token_ids: bool
    logprobs: bool
    timeout_s: float
    connect_timeout_s: float
    weight_version: str | None = None
    api_key_set: bool = False

    @classmethod
    def of(cls, spec: UpstreamSpec) -> UpstreamRead:
        """The redacted view of one upstream."""
        return cls(**spec.model_dump(exclude={"api_key"}), api_key_set=bool(spec.api_key))


class RetryPolicy(BaseModel):
    """Exponential backoff with jitter; Retry-After wins when the upstream sends it."""

    max_attempts: int = Field(4, ge=1)
    base_s: float = Field(0.05, ge=0)
    max_backoff_s: float = Field(8.0, ge=0)
    jitter: float = Field(0.25, ge=0, le=1)
    max_retry_after_s: float = Field(30.0, ge=0)


class RateLimitPolicy(BaseModel):
    """Token bucket per API key; ``rate_per_s`` 0 turns limiting off."""

    rate_per_s: float = Field(0.0, ge=0)
    burst: int = Field(100, ge=1)
    max_keys: int = Field(100_000, ge=1)


class GatewayConfig(BaseModel):
    """Everything the gateway needs to route, retry, limit and capture."""

    upstreams: list[UpstreamSpec] = Field(default_factory=list)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    rate_limit: RateLimitPolicy = Field(default_factory=RateLimitPolicy)
    drain_retry_after_s: float = Field(5.0, ge=0)
    max_sticky_sessions: int = Field(100_000, ge=1)


def load_gateway_config(path: str | Path) -> GatewayConfig:
    """Read a gateway config from a YAML or JSON file."""
    text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    return GatewayConfig.model_validate(data or {})
