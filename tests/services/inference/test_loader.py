"""Model sources and loading: the bundled GGUF, HF directories, the conversion cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.inference.config import engine_config
from services.inference.errors import ModelLoadError
from services.inference.loader import (
    DEFAULT_GGUF,
    LoadedModel,
    converted_path,
    default_gguf_path,
    load_model,
    read_state_dict,
    resolve_source,
)


def test_default_source_is_the_packaged_gguf() -> None:
    source = resolve_source("")
    assert source.kind == "gguf" and source.path == default_gguf_path()
    assert source.path.name == DEFAULT_GGUF and source.name == "SmolLM2-135M-Instruct"
    assert resolve_source(str(source.path)) == source


def test_cached_load_is_fast_and_flagged(loaded: LoadedModel) -> None:
    again = load_model(resolve_source(""), cache_dir=engine_config().cache_dir)
    assert again.from_cache and again.load_s < 30
    assert again.tokenizer.encode("hello") == loaded.tokenizer.encode("hello")


def test_converted_folder_loads_as_an_hf_directory(loaded: LoadedModel) -> None:
    folder = converted_path(resolve_source(""), engine_config().cache_dir)
    source = resolve_source(str(folder))
    assert source.kind == "hf_dir"
    assert set(read_state_dict(folder)) >= {k for k in loaded.model.state_dict() if "embed" in k}


@pytest.mark.parametrize("spec", ["/definitely/not/here.gguf", "relative-dir-without-config"])
def test_bad_specs_are_refused(spec: str) -> None:
    with pytest.raises(ModelLoadError):
        resolve_source(spec)


def test_a_directory_without_config_is_not_a_model(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError):
        resolve_source(str(tmp_path))
    with pytest.raises(ModelLoadError):
        read_state_dict(tmp_path)

