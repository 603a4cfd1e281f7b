"""Engine settings: ``TRAJFORGE_*`` variables read by the one shared Settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.inference.config import engine_config
from services.inference.service import EngineHolder
from shared.settings import Settings


def test_defaults_and_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert Settings().local_model == ""
    monkeypatch.setenv("TRAJFORGE_LOCAL_MODEL", "/models/x.gguf")
    monkeypatch.setenv("TRAJFORGE_MODEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRAJFORGE_MAX_BATCH_SIZE", "4")
    monkeypatch.setenv("TRAJFORGE_TORCH_THREADS", "2")
    config = engine_config(Settings())
    assert config.local_model == "/models/x.gguf" and config.max_batch_size == 4
    assert config.cache_dir == tmp_path and config.torch_threads == 2


def test_cache_dir_defaults_under_home(tmp_path: Path) -> None:
    config = engine_config(Settings(home=tmp_path))
    assert config.cache_dir == tmp_path / "models"


def test_served_name_is_known_before_the_model_loads(tmp_path: Path) -> None:
    holder = EngineHolder(engine_config(Settings(home=tmp_path, local_model_name="policy")))
    assert holder.served_name == "policy" and not holder.loaded
    assert EngineHolder(engine_config(Settings(home=tmp_path))).served_name == "SmolLM2-135M-Instruct"
