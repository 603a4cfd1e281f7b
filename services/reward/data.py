"""Where the real public data sets live: beside the repository, or TRAJFORGE_SHARED_DATA_DIR."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shared.settings import get_settings

__all__ = ["load_rows", "shared_data_dir"]

_REPO_ROOT = Path(__file__).resolve().parents[2]


def shared_data_dir() -> Path:
    """The data folder: the setting if given, else ``<repo>/../shared/data``."""
    return get_settings().shared_data_dir or _REPO_ROOT.parent / "shared" / "data"


def load_rows(name: str) -> list[dict[str, Any]]:
    """All rows of one JSONL file in the data folder."""
    with (shared_data_dir() / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
