"""The local model's source and served name, read from the settings without loading it."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.errors import ModelLoadError
from shared.local_model import resolve_source, served_model_name
from shared.settings import Settings


def test_served_name_is_the_setting_else_the_sources_name(tmp_path: Path) -> None:
    assert served_model_name(Settings(home=tmp_path, local_model_name="policy")) == "policy"
    assert served_model_name(Settings(home=tmp_path)) == resolve_source("").name == "SmolLM2-135M-Instruct"
    (tmp_path / "my-model").mkdir()
    (tmp_path / "my-model" / "config.json").write_text("{}")
    assert served_model_name(Settings(home=tmp_path, local_model=str(tmp_path / "my-model"))) == "my-model"


def test_no_local_model_is_a_model_load_error(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError):
        served_model_name(Settings(home=tmp_path, local_model=str(tmp_path / "missing.gguf")))
