"""DedupFilter and streaming dedup: longest wins, order kept, streaming equals in-memory."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from services.cleaning.dedup import DedupFilter, is_real_user, row_signature, stream_dedup
from services.cleaning.signature_store import MemorySignatureStore, SqliteSignatureStore


def _row(rid: str, user: str, reply: str, extra: int = 0, system: str = "sys") -> dict[str, Any]:
    msgs = [
        {"role": "system", "content": system},
        {"role": "user", "content": user},
        {"role": "assistant", "content": reply},
    ]
    msgs += [{"role": "user", "content": f"more {i}"} for i in range(extra)]
    return {"id": rid, "messages": msgs}


def test_longest_wins_and_kept_order() -> None:
    rows = [
        _row("a", "hi", "yo"),
        _row("b", "other", "x"),
        _row("c", "hi", "yo", extra=2),
        _row("d", "hi", "yo", extra=2),
    ]
    kept, dropped = DedupFilter()(rows)
    assert [r["id"] for r in kept] == ["b", "c"]
    assert [(r["id"], r["drop_reason"], r["drop_step"]) for r in dropped] == [
        ("a", "duplicate", "DedupFilter"),
        ("d", "duplicate", "DedupFilter"),
    ]


def test_system_prompt_and_injected_users_ignored() -> None:
    injected = _row("b", "hi", "yo", system="other system")
    injected["messages"].insert(
        1, {"role": "user", "content": "<system-reminder>be brief</system-reminder>"}
    )
    kept, dropped = DedupFilter()([_row("a", "hi", "yo"), injected])
    assert [r["id"] for r in kept] == ["b"] and [r["id"] for r in dropped] == ["a"]
    assert not is_real_user({"role": "user", "content": "  <context>x</context>"})
    assert is_real_user({"role": "user", "content": "<contextual> question"})


def test_tool_call_only_reply_skipped_for_signature() -> None:
    a = _row("a", "hi", "final answer")
    b = {
        "id": "b",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": []},
            {"role": "assistant", "content": "final answer"},
        ],
    }
    assert row_signature(a) == row_signature(b)


def test_normalize_collapses_whitespace_and_case_but_reference_mode_does_not() -> None:
    a, b = _row("a", "Hello   World", "OK"), _row("b", "hello world\n", "ok")
    assert row_signature(a) == row_signature(b)
    assert row_signature(a, normalize=False) != row_signature(b, normalize=False)


def test_head_tail_only_compares_ends() -> None:
    middle_a, middle_b = "x" * 300, "y" * 300
    a, b = (
        _row("a", "A" * 100 + middle_a + "Z" * 100, "r"),
        _row("b", "A" * 100 + middle_b + "Z" * 100, "r"),
    )
    assert row_signature(a) == row_signature(b)
    assert row_signature(a, prefix_chars=200) != row_signature(b, prefix_chars=200)


def test_real_rows_with_copies(real_rows: list[dict[str, Any]]) -> None:
    rows = real_rows + [
        dict(copy.deepcopy(r), id=f"copy-{i}") for i, r in enumerate(real_rows[:40])
    ]
    kept, dropped = DedupFilter()(rows)
    assert len(kept) + len(dropped) == len(rows)
    assert {f"copy-{i}" for i in range(40)} <= {r["id"] for r in dropped}
    assert {r["id"] for r in kept}.isdisjoint({f"copy-{i}" for i in range(40)})
    positions = [rows.index(r) for r in kept]
    assert positions == sorted(positions)


def _streamed(rows: list[dict[str, Any]], store: Any) -> list[str]:
    return [row["id"] for ok, row in stream_dedup(lambda: iter(rows), store, batch_size=7) if ok]


def test_streaming_equals_in_memory_on_real_rows(
    real_rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    rows = real_rows + [
        dict(copy.deepcopy(r), id=f"copy-{i}") for i, r in enumerate(real_rows[::3])
    ]
    rows += [
        dict(
            _row(f"long-{i}", "", ""),
            messages=r["messages"] + [{"role": "user", "content": "again"}],
        )
        for i, r in enumerate(real_rows[:5])
    ]
    expected = [r["id"] for r in DedupFilter()(rows)[0]]
    sqlite_store = SqliteSignatureStore(tmp_path / "sig.db")
    assert _streamed(rows, sqlite_store) == expected
    sqlite_store.close()
    assert _streamed(rows, MemorySignatureStore()) == expected
    assert any(i.startswith("long-") for i in expected)
