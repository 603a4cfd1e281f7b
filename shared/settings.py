"""Settings from the environment (``TRAJFORGE_*``), read once and injected."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["DEFAULT_MAX_REQUEST_BYTES", "Settings", "get_settings"]

#: Default of the one body limit (``TRAJFORGE_MAX_REQUEST_BYTES``).
DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024


def _default_home() -> Path:
    return Path.home() / ".trajforge"


class Settings(BaseSettings):
    """Every knob of the suite; one instance per process, from ``TRAJFORGE_*`` variables."""

    model_config = SettingsConfigDict(env_prefix="TRAJFORGE_", env_file=None, extra="ignore")

    env: Literal["dev", "test", "prod"] = "dev"
    home: Path = Field(default_factory=_default_home)
    # Empty means the embedded SQLite file under ``home``.
    database_url: str = ""
    # Empty means no broker: work runs in-process (the embedded default).
    redis_url: str = ""
    auth_enabled: bool = True
    # Path of the key file the embedded default writes on first start.
    local_key_file: Path | None = None
    # The one body limit: HTTP request bodies (every app), gateway calls and env WebSocket messages.
    max_request_bytes: int = Field(DEFAULT_MAX_REQUEST_BYTES, ge=1024)
    log_level: str = "INFO"
    log_json: bool = True
    queue_name: str = "trajforge"
    queue_visibility_timeout_s: int = Field(3600, ge=1)
    queue_task_time_limit_s: int = Field(3000, ge=1)
    # In-process runs retry a task's transient failures as Celery does: 1, 2, 4, ... times this (half of it jittered).
    queue_retry_backoff_s: float = Field(1.0, ge=0)
    shared_data_dir: Path | None = None
    # Rows one ``POST /v1/clean`` may carry (413 above); bigger inputs go through dataset jobs.
    max_rows: int = Field(10_000, ge=1)
    # A dataset line longer than this becomes a per-row error instead of a row.
    max_row_bytes: int = Field(16 * 1024 * 1024, ge=1024)
    # Worker processes of the PII step in cleaning jobs (1 = run it inline).
    pii_processes: int = Field(1, ge=1, le=64)
    db_pool_size: int = Field(10, ge=1)
    tools_pool_size: int = Field(8, ge=1, le=256)
    tools_acquire_timeout_s: float = Field(30.0, gt=0)
    tools_uid_base: int = Field(20000, ge=1000)
    # Per-call sandbox budgets (every service that runs user code uses the same profile).
    tools_memory_bytes: int = Field(512 * 1024 * 1024, ge=16 * 1024 * 1024)
    tools_cpu_s: int = Field(95, ge=1)
    tools_cpu_cores: float = Field(1.0, ge=0.05, le=64.0)
    tools_max_processes: int = Field(64, ge=4)
    tools_tmpfs_bytes: int = Field(64 * 1024 * 1024, ge=1024 * 1024)
    tools_tmpfs_inodes: int = Field(8192, ge=64)
    # "required": the tools service refuses to start without bubblewrap; "optional": it starts
    # without the code tools (python, bash) instead, so nothing ever runs outside a sandbox.
    tools_sandbox: Literal["required", "optional"] = "required"
    envs_max_sessions: int = Field(1024, ge=1)
    envs_idle_timeout_s: float = Field(600.0, gt=0)
    # Envs the envs service hosts besides the built-in ones: name -> ``module:Class`` (operator
    # configuration, imported when the service starts).
    envs_extra: dict[str, str] = Field(default_factory=dict)
    # Trajectories per queue task when a rollout job is re-scored.
    reward_rescore_batch_size: int = Field(64, ge=1, le=10000)
    # Module prefixes a score request may load user reward processors from; empty refuses them all.
    reward_processor_modules: list[str] = Field(default_factory=list)
    # Module prefixes a rollout job may load user rollout processors from; empty refuses them all.
    rollout_processor_modules: list[str] = Field(default_factory=list)
    # Function components (services/functions): where packages, workspaces, the dependency cache and
    # instance scratch dirs live (empty: ``<home>/functions``); upload and build bounds; autoscaling.
    functions_dir: Path | None = None
    functions_max_package_bytes: int = Field(64 * 1024 * 1024, ge=1024)
    functions_max_unpacked_bytes: int = Field(512 * 1024 * 1024, ge=1024)
    functions_build_timeout_s: float = Field(900.0, gt=0)
    # How often each pool checks its load; how long it must stay idle before an instance is removed.
    functions_scale_interval_s: float = Field(0.5, gt=0, le=60)
    functions_scale_down_after_s: float = Field(30.0, ge=0)
    # How long a new instance may take to import its code; how long a cancelled call may take to stop.
    functions_start_timeout_s: float = Field(120.0, gt=0)
    functions_cancel_grace_s: float = Field(2.0, gt=0)
    # A component pool no call has used for this long is stopped (its instances freed).
    functions_pool_idle_ttl_s: float = Field(1800.0, gt=0)
    # This deployment's own base URL (``http://host:8000``), where rollout processors reach the
    # gateway; empty: they reach an in-process gateway through an in-memory transport.
    public_base_url: str = ""
    # Policy calls in flight per rollout shard (one request per trajectory turn). Set it to what the
    # upstream serves at once (vLLM's max_num_seqs): beyond that, requests queue in the upstream's
    # FIFO, where the shard's scheduling rule no longer applies.
    rollout_concurrency: int = Field(64, ge=1, le=4096)
    # Which waiting policy call a shard serves first when all slots are taken
    # (services/rollout/schedule.py: estimate, turns, waited, service, fifo).
    rollout_schedule: Literal["turns", "waited", "service", "fifo", "estimate"] = "estimate"
    # How often a running shard checks for cancellation and the events stream polls the job.
    rollout_poll_s: float = Field(0.5, gt=0, le=60)
    # Local CPU engine: an HF model directory, a .gguf file, or empty for the bundled SmolLM2.
    local_model: str = ""
    # Name the OpenAI routes answer to; empty means the model's own name.
    local_model_name: str = ""
    # Where converted weights are cached; empty means ``<home>/models``.
    model_cache_dir: Path | None = None
    max_batch_size: int = Field(8, ge=1, le=256)
    default_max_tokens: int = Field(256, ge=1)
    # Torch intra-op threads for the generation thread; 0 keeps torch's default.
    torch_threads: int = Field(0, ge=0)
    # Gateway upstream config file (YAML or JSON); empty means the in-process local engine.
    gateway_config: str = ""
    # Trace rows are written in batches by a background flusher with a bounded queue.
    gateway_trace_queue_size: int = Field(10_000, ge=1)
    gateway_trace_batch_size: int = Field(256, ge=1)
    gateway_trace_write_attempts: int = Field(3, ge=1)
    # How long a batch waits for more rows after its first, so a trickle of calls shares transactions.
    gateway_trace_linger_s: float = Field(0.05, ge=0, le=5)
    # Console served on its own: the API it reads (empty: the app it is mounted in serves the API),
    # and path prefixes served elsewhere (``{"/v1/clean": "http://cleaning:8000/v1/clean"}``).
    console_api_url: str = ""
    console_routes: dict[str, str] = Field(default_factory=dict)
    # Where each service is reached by the others (``http://host:port``, the service's own root); empty
    # means in-process: the client calls the service's ASGI app in this process (the embedded default).
    # docker-compose.yml and ``trajforge up --split`` fill the same table.
    gateway_url: str = ""
    inference_url: str = ""
    cleaning_url: str = ""
    tools_url: str = ""
    envs_url: str = ""
    rollout_url: str = ""
    reward_url: str = ""
    functions_url: str = ""
    # Key a service presents where it is another service's upstream (the gateway calling the
    # inference service by URL); ``trajforge up --split`` creates one for its processes.
    service_key: str = Field("", repr=False)
    # Service-client budgets: per-request timeout, and attempts for calls that are safe to repeat.
    client_timeout_s: float = Field(60.0, gt=0, le=3600)
    client_connect_timeout_s: float = Field(5.0, gt=0, le=600)
    client_attempts: int = Field(3, ge=1, le=20)
    # Secret used to salt API-key hashes; the dev default is refused in prod.
    key_salt: str = "trajforge-dev-salt"

    @model_validator(mode="after")
    def _refuse_dev_secrets_in_prod(self) -> Settings:
        if self.env == "prod" and self.key_salt == "trajforge-dev-salt":
            raise ValueError("TRAJFORGE_KEY_SALT must be set to a secret value when TRAJFORGE_ENV=prod")
        if self.env == "prod" and not self.auth_enabled:
            raise ValueError("TRAJFORGE_AUTH_ENABLED=false is refused when TRAJFORGE_ENV=prod")
        return self

    @property
    def effective_database_url(self) -> str:
        """The configured URL, or the embedded SQLite file under ``home``."""
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{self.home / 'trajforge.db'}"

    @property
    def is_embedded(self) -> bool:
        """True when no broker is configured and work runs in-process."""
        return not self.redis_url

    @property
    def model_cache_path(self) -> Path:
        """Folder holding converted model weights."""
        return self.model_cache_dir or self.home / "models"

    def service_url(self, service: str) -> str:
        """``TRAJFORGE_<SERVICE>_URL`` of one service; empty means in-process."""
        return str(getattr(self, f"{service}_url", "") or "")

    @property
    def functions_path(self) -> Path:
        """Root of the functions service's files."""
        return self.functions_dir or self.home / "functions"

    @property
    def key_file(self) -> Path:
        return self.local_key_file or self.home / "api_key"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read from the environment once."""
    return Settings()
