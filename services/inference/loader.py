"""Load the local model (its source found by ``shared.local_model``); GGUF files are converted once and cached."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.inference.errors import ModelLoadError
from shared.local_model import DEFAULT_GGUF, ModelSource, default_gguf_path, resolve_source
from shared.local_tokenizer import COMPLETE_MARKER, converted_path, load_tokenizer

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

@dataclass
class LoadedModel:
    """A loaded causal LM, its tokenizer, and how the load went."""

    model: Any
    tokenizer: Any
    name: str
    load_s: float
    from_cache: bool


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
    (staging / COMPLETE_MARKER).write_text("ok\n")
    # Rename last so a crash mid-save never leaves a cache that looks complete.
    if not (target / COMPLETE_MARKER).is_file():
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
            if (target / COMPLETE_MARKER).is_file():
                model, tokenizer = _load_hf(target)
                from_cache = True
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                model, tokenizer = _convert_gguf(source, target)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"Could not load model {source.name!r} from {source.path.name}: {exc}") from exc
    return LoadedModel(model, tokenizer, source.name, time.perf_counter() - started, from_cache)


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
