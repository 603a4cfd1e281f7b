"""NearDedupFilter: edited copies are found, distinct rows kept, results deterministic."""

from __future__ import annotations

import copy
from typing import Any

from services.cleaning.near_dedup import NearDedupFilter, conversation_text

_WEATHER = (
    "今天北京天气晴朗，最高温度二十五度，最低温度十五度，空气质量良好，适合户外活动，记得多喝水"
)


def _edited(row: dict[str, Any], i: int) -> dict[str, Any]:
    out = copy.deepcopy(row)
    out["id"] = f"edit-{i}"
    for m in out["messages"]:
        if m.get("role") == "user" and isinstance(m.get("content"), str):
            m["content"] = "  " + m["content"].replace(" ", "  ", 2) + " thanks!"
            break
    return out


def test_finds_edited_copies_of_real_rows(real_rows: list[dict[str, Any]]) -> None:
    originals = real_rows[:40]
    rows = originals + [_edited(r, i) for i, r in enumerate(originals[:10])]
    kept, dropped = NearDedupFilter(threshold=0.8)(rows)
    dropped_ids = {r["id"] for r in dropped}
    assert {f"edit-{i}" for i in range(10)} <= dropped_ids
    assert all(r["drop_reason"] == "near_duplicate" for r in dropped)
    assert len(kept) + len(dropped) == len(rows)


def test_distinct_rows_kept_and_deterministic() -> None:
    rows = [
        {
            "id": 1,
            "messages": [
                {"role": "user", "content": "How do I sort a list in Python?"},
                {"role": "assistant", "content": "Use sorted()."},
            ],
        },
        {
            "id": 2,
            "messages": [
                {"role": "user", "content": "今天北京的天气怎么样？"},
                {
                    "role": "assistant",
                    "content": _WEATHER + "。",
                },
            ],
        },
        {
            "id": 3,
            "messages": [
                {"role": "user", "content": "今天北京的天气怎么样？？"},
                {
                    "role": "assistant",
                    "content": _WEATHER + "！",
                },
            ],
        },
    ]
    first = NearDedupFilter(threshold=0.7)(rows)
    second = NearDedupFilter(threshold=0.7)(rows)
    assert [r["id"] for r in first[0]] == [1, 2] == [r["id"] for r in second[0]]
    assert [r["id"] for r in first[1]] == [3]


def test_conversation_text_normalises_and_caps() -> None:
    row = {
        "messages": [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "A  B\n"},
            {"role": "tool", "content": "T"},
            {"role": "assistant", "content": "C"},
        ]
    }
    assert conversation_text(row) == "a b c"
    assert conversation_text(row, max_chars=3) == "a b"


def test_disk_index_gives_the_verdicts_of_an_in_memory_lsh(real_rows: list[dict[str, Any]], tmp_path) -> None:  # type: ignore[no-untyped-def]
    from datasketch import MinHashLSH

    rows = real_rows[:60] + [_edited(r, i) for i, r in enumerate(real_rows[:15])]
    step = NearDedupFilter(threshold=0.8)
    lsh, sketches, expected = MinHashLSH(threshold=0.8, num_perm=step.num_perm), {}, []
    for row in rows:
        mh = step.minhash(conversation_text(row))
        dup = any(mh.jaccard(sketches[k]) >= 0.8 for k in lsh.query(mh))
        expected.append(not dup)
        if not dup:
            sketches[len(sketches)] = mh
            lsh.insert(len(sketches) - 1, mh)
    path = tmp_path / "near.sqlite"
    with step.index(path) as index:
        got = [index.admit(r) for r in rows]
        assert len(index) == sum(expected)
    assert got == expected and not all(got)
    assert path.stat().st_size > 0  # the signatures went to disk
    with step.index(path) as reopened:  # and stay there: a reopened index still knows them
        assert not reopened.admit(rows[0])
        assert reopened.last_jaccard == 1.0
    kept, dropped = step(rows)
    assert dropped and all(d["drop_evidence"]["jaccard"] >= 0.8 for d in dropped)
