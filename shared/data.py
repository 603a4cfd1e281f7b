"""The real public trajectories beside the repository (``../shared/data``), for demos, tests and benchmarks.

``TRAJFORGE_SHARED_DATA_DIR`` points elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from shared.settings import get_settings

__all__ = ["data_dir", "load_all_rows", "load_rows"]

_REPO_ROOT = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    """The data folder: the setting if given, else ``<repository>/../shared/data``."""
    return get_settings().shared_data_dir or _REPO_ROOT.parent / "shared" / "data"


def load_rows(name: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The first ``limit`` rows (all by default) of one JSONL file of the data folder."""
    rows: list[dict[str, Any]] = []
    with open(data_dir() / name, "rb") as fh:
        for line in fh:
            if limit is not None and len(rows) >= limit:
                break
            if line.strip():
                rows.append(orjson.loads(line))
    return rows


def load_all_rows() -> list[dict[str, Any]]:
    """Every row of every JSONL file in the data folder, files in name order."""
    rows: list[dict[str, Any]] = []
    for path in sorted(data_dir().glob("*.jsonl")):
        rows.extend(load_rows(path.name))
    return rows
