"""Engine settings from ``TRAJFORGE_*`` variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.inference.config import InferenceSettings


def test_defaults_and_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert InferenceSettings().local_model == ""
    monkeypatch.setenv("TRAJFORGE_LOCAL_MODEL", "/models/x.gguf")
    monkeypatch.setenv("TRAJFORGE_MODEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRAJFORGE_MAX_BATCH_SIZE", "4")
    settings = InferenceSettings()
    assert settings.local_model == "/models/x.gguf" and settings.max_batch_size == 4
    assert settings.cache_dir() == tmp_path


def test_cache_dir_defaults_under_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRAJFORGE_MODEL_CACHE_DIR", raising=False)
    assert InferenceSettings().cache_dir().name == "models"
