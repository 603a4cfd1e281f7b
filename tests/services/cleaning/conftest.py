"""Fixtures for cleaning tests: real rows from the shared data folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]


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


def load_rows(name: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The first ``limit`` rows of one JSONL file of the shared data."""
    rows: list[dict[str, Any]] = []
    with open(shared_data_dir() / name, "rb") as fh:
        for line in fh:
            if line.strip():
                rows.append(orjson.loads(line))
            if limit is not None and len(rows) >= limit:
                break
    return rows


@pytest.fixture(scope="session")
def real_rows() -> list[dict[str, Any]]:
    """A mix of English, Chinese, Korean and Japanese rows."""
    return (
        load_rows("glaive_toolcall_en_llamafactory.jsonl", 60)
        + load_rows("glaive_toolcall_zh_llamafactory.jsonl", 60)
        + load_rows("ko_functionchat_dialog.jsonl", 30)
        + load_rows("zh_mt_bench_gpt4.jsonl", 30)
        + load_rows("tau_bench_airline_gpt4o_trajectories.jsonl", 10)
    )
