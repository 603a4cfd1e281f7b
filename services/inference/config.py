"""The engine's view of the shared settings (``TRAJFORGE_LOCAL_MODEL`` and friends live in ``shared.settings``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from shared.settings import Settings, get_settings

__all__ = ["EngineConfig", "engine_config"]


class EngineConfig(BaseModel):
    """Knobs of the local CPU engine; empty ``local_model`` means the bundled SmolLM2 GGUF."""

    local_model: str = ""
    local_model_name: str = ""
    cache_dir: Path
    max_batch_size: int = 8
    default_max_tokens: int = 256
    torch_threads: int = 0


def engine_config(settings: Settings | None = None) -> EngineConfig:
    """The engine knobs of ``settings`` (the process-wide settings by default)."""
    s = settings or get_settings()
    return EngineConfig(local_model=s.local_model, local_model_name=s.local_model_name, cache_dir=s.model_cache_path,
                        max_batch_size=s.max_batch_size, default_max_tokens=s.default_max_tokens,
                        torch_threads=s.torch_threads)
