"""Settings of the local inference engine (``TRAJFORGE_*``), to be merged into shared settings."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from shared.settings import get_settings

__all__ = ["InferenceSettings", "get_inference_settings"]


class InferenceSettings(BaseSettings):
    """Knobs of the local CPU engine; empty ``local_model`` means the bundled SmolLM2 GGUF."""

    model_config = SettingsConfigDict(env_prefix="TRAJFORGE_", env_file=None, extra="ignore")

    # An HF model directory, a .gguf file, or empty for the bundled default.
    local_model: str = ""
    # Name the OpenAI routes answer to; empty means the model's own name.
    local_model_name: str = ""
    # Where converted weights are cached; empty means ``<home>/models``.
    model_cache_dir: Path | None = None
    max_batch_size: int = Field(8, ge=1, le=256)
    default_max_tokens: int = Field(256, ge=1)
    # Torch intra-op threads for the generation thread; 0 keeps torch's default.
    torch_threads: int = Field(0, ge=0)

    def cache_dir(self) -> Path:
        """Folder holding converted model weights."""
        return self.model_cache_dir or get_settings().home / "models"


@lru_cache(maxsize=1)
def get_inference_settings() -> InferenceSettings:
    """The process-wide engine settings, read from the environment once."""
    return InferenceSettings()
