"""The fake upstream's template and tokenizer (the ground truth of the gateway tests)."""

from __future__ import annotations

from services.gateway.testing_upstream import MERGED, decode, encode, render


def test_template_is_append_only_except_for_think_blocks() -> None:
    m1 = [{"role": "user", "content": "q"}]
    m2 = [*m1, {"role": "assistant", "content": "a"}, {"role": "user", "content": "r"}]
    assert render(m2).startswith(render(m1) + "a<|end|>")
    m3 = [*m1, {"role": "assistant", "content": "<think>x</think>a"}]
    assert "<think>" not in render(m3)


def test_ids_round_trip_and_merged_ids_decode_to_the_same_text() -> None:
    assert decode(encode("héllo")) == "héllo"
    assert decode([300]) == MERGED[300] == decode(encode(MERGED[300]))
