"""Benchmark data: where the real rows live and how to read them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The shared data folder beside the repository, or ``TRAJFORGE_SHARED_DATA_DIR``."""
    override = os.environ.get("TRAJFORGE_SHARED_DATA_DIR")
    return Path(override) if override else REPO_ROOT.parent / "shared" / "data"


def load_all_rows() -> list[dict[str, Any]]:
    """Every row of every JSONL file in the shared data folder, files in name order."""
    rows: list[dict[str, Any]] = []
    for path in sorted(shared_data_dir().glob("*.jsonl")):
        with open(path, "rb") as fh:
            rows.extend(orjson.loads(line) for line in fh if line.strip())
    return rows
