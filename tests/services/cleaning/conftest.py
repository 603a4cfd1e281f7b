"""Fixtures for cleaning tests: real rows from the shared data folder."""

from __future__ import annotations

from typing import Any

import pytest

from shared.data import load_rows


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
