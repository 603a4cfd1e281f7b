"""Row builders for cleaning tests, and where the shared data folder is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shared.data import data_dir as shared_data_dir


def chat(*turns: str, **extra: Any) -> dict[str, Any]:
    """A row alternating user/assistant turns."""
    roles = ("user", "assistant")
    return {"messages": [{"role": roles[i % 2], "content": t} for i, t in enumerate(turns)], **extra}



def data_dir() -> Path:
    """The shared data folder; it is part of the development setup."""
    path = shared_data_dir()
    assert path.is_dir(), f"shared data folder missing at {path}"
    return path
