"""One row's stop rules and the text it reports, with the real tokenizer's decode."""

from __future__ import annotations

from services.inference.engine import Engine
from services.inference.params import GenParams, SeqDelta
from services.inference.sequence import Sequence


def _row(local_engine: Engine, params: GenParams) -> tuple[Sequence, list[SeqDelta]]:
    seen: list[SeqDelta] = []
    row = Sequence(index=0, prompt_ids=[1], params=params, eos_ids=frozenset({2}), decode=local_engine.decode,
                   sink=seen.append)
    return row, seen


def _feed(row: Sequence, local_engine: Engine, text: str) -> None:
    for token in local_engine.encode(text):
        if not row.finished:
            row.append(token, -0.5, [])


def test_stop_string_across_tokens_is_cut_and_held_back(local_engine: Engine) -> None:
    row, seen = _row(local_engine, GenParams(max_tokens=50, stop=["world"]))
    _feed(row, local_engine, "hello world again")
    assert row.finish_reason == "stop" and row.stop_reason == "world"
    assert row.text == "hello "
    assert all(not d.text.endswith("wor") for d in seen)  # partial stop strings never leak


def test_eos_and_stop_token_ids(local_engine: Engine) -> None:
    row, _ = _row(local_engine, GenParams(max_tokens=10))
    row.append(2, -0.1, [])
    assert row.finish_reason == "stop" and row.stop_reason is None and row.token_ids == [2]
    row, _ = _row(local_engine, GenParams(max_tokens=10, stop_token_ids=[7]))
    row.append(7, -0.1, [])
    assert row.stop_reason == 7


def test_length_and_ignore_eos(local_engine: Engine) -> None:
    row, seen = _row(local_engine, GenParams(max_tokens=2, ignore_eos=True))
    row.append(2, -0.1, [])
    assert not row.finished
    row.append(5, -0.2, [])
    assert row.finish_reason == "length" and seen[-1].finished
    out = row.output()
    assert out.token_ids == [2, 5] and out.logprobs == [-0.1, -0.2]


def test_abort_reports_once(local_engine: Engine) -> None:
    row, seen = _row(local_engine, GenParams(max_tokens=5))
    row.abort()
    row.abort()
    assert row.finish_reason == "abort" and len(seen) == 1 and seen[0].finished
