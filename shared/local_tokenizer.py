"""The local model's tokenizer and chat template, without its weights.

For a process that renders prompts but never samples (a rollout worker in token
mode whose policy is the gateway): the same files the engine's own tokenizer
comes from, so the ids agree. A GGUF model is converted once into
``converted_path`` (the inference service's loader writes it, ``COMPLETE_MARKER``
last); its tokenizer is read from there once complete, else from the GGUF.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from shared.errors import ModelLoadError
from shared.local_model import ModelSource, resolve_source
from shared.settings import Settings, get_settings

__all__ = ["COMPLETE_MARKER", "cached_tokenizer", "converted_path", "load_tokenizer", "local_tokenizer"]

#: Written last into a converted model's folder: a folder without it is an interrupted conversion.
COMPLETE_MARKER = ".complete"


def converted_path(source: ModelSource, cache_dir: Path) -> Path:
    """Folder where the converted weights of a GGUF source are cached."""
    # Size and quantisation suffix in the key: a replaced file gets a fresh conversion.
    return cache_dir / f"{source.path.stem}-{source.path.stat().st_size}"


def load_tokenizer(source: ModelSource, *, cache_dir: Path) -> Any:
    """The tokenizer and chat template of ``source`` without its weights."""
    from transformers import AutoTokenizer

    try:
        if source.kind == "hf_dir":
            return AutoTokenizer.from_pretrained(source.path)
        target = converted_path(source, cache_dir)
        if (target / COMPLETE_MARKER).is_file():
            return AutoTokenizer.from_pretrained(target)
        return AutoTokenizer.from_pretrained(source.path.parent, gguf_file=source.path.name)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"Could not load the tokenizer of {source.name!r} from {source.path.name}: {exc}") from exc


_loaded: dict[tuple[Path, Path], Any] = {}
_loading = threading.Lock()


def cached_tokenizer(model: str, cache_dir: Path) -> Any:
    """``load_tokenizer`` for the model setting ``model``, once per process (blocking; thread-safe)."""
    source = resolve_source(model)
    key = (source.path, cache_dir)
    with _loading:
        if key not in _loaded:
            _loaded[key] = load_tokenizer(source, cache_dir=cache_dir)
        return _loaded[key]


async def local_tokenizer(settings: Settings | None = None) -> Any:
    """The configured local model's tokenizer (``TRAJFORGE_LOCAL_MODEL``), loaded off the event loop once."""
    s = settings or get_settings()
    return await asyncio.to_thread(cached_tokenizer, s.local_model, s.model_cache_path)
