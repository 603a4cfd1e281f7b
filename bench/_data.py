"""Benchmark data: where the real rows live and how to read them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

REPO_ROOT = Path(__file__).resolve().parents[1]


def _main_checkout(root: Path) -> Path:
    # In a linked worktree ".git" is a file naming <main>/.git/worktrees/<name>.
    marker = root / ".git"
    if marker.is_file():
        gitdir = Path(marker.read_text().split(":", 1)[1].strip())
        return gitdir.parents[2]
    return root


def shared_data_dir() -> Path:
    """The shared data folder beside the repository, or ``TRAJFORGE_SHARED_DATA_DIR``."""
    override = os.environ.get("TRAJFORGE_SHARED_DATA_DIR")
    if override:
        return Path(override)
    for root in (REPO_ROOT, _main_checkout(REPO_ROOT)):
        candidate = root.parent / "shared" / "data"
        if candidate.is_dir():
            return candidate
    raise RuntimeError(
        "shared data folder not found beside the repository; set TRAJFORGE_SHARED_DATA_DIR"
    )


def load_all_rows() -> list[dict[str, Any]]:
    """Every row of every JSONL file in the shared data folder, files in name order."""
    rows: list[dict[str, Any]] = []
    for path in sorted(shared_data_dir().glob("*.jsonl")):
        with open(path, "rb") as fh:
            rows.extend(orjson.loads(line) for line in fh if line.strip())
    return rows
