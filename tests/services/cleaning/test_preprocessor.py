import orjson

from services.cleaning.hard import HardFilter
from services.cleaning.model_filter import ModelFilter
from services.cleaning.preprocessor import QualityPreprocessor
from tests.services.cleaning.builders import chat

GOOD = chat("Please compare merge sort and quicksort in detail.",
            "Merge sort is stable and O(n log n) in all cases; quicksort is in-place and faster on average.",
            id="g", model_id="deepseek-ai/DeepSeek-V3")


def test_runs_steps_in_order_with_stats_and_drop_metadata(tmp_path):
    log = tmp_path / "sub" / "dropped.jsonl"
    rows = [GOOD, {**GOOD, "id": "m", "model_id": "other/x"}, chat("hi", "Hello!", id="t")]
    res = QualityPreprocessor([HardFilter(), ModelFilter()], dropped_log_path=log)(rows)
    assert [r["id"] for r in res.kept] == ["g"]
    assert {(d["id"], d["drop_step"], d["drop_reason"]) for d in res.dropped} == {
        ("t", "HardFilter", "trivial_single_turn"), ("m", "ModelFilter", "model_not_allowed")}
    assert [(s.step, s.rows_in, s.rows_out, s.dropped) for s in res.stats] == [
        ("HardFilter", 3, 2, {"trivial_single_turn": 1}), ("ModelFilter", 2, 1, {"model_not_allowed": 1})]
    lines = [orjson.loads(x) for x in log.read_bytes().splitlines()]
    assert {x["step"] for x in lines} == {"HardFilter", "ModelFilter"} and lines[0]["row"]["drop_reason"]


def test_invalid_rows_are_counted_never_lost(tmp_path):
    bad = ["text", {"no": "messages"}, {"messages": "x"}, {"messages": [1]}, {"messages": [{"content": "x"}]},
           {"messages": [{"role": "user", "content": 5}]}]
    res = QualityPreprocessor([HardFilter()])(bad + [GOOD])
    assert len(res.kept) + len(res.dropped) + len(res.invalid) == res.total_in == 7
    assert {r["drop_reason"] for r in res.invalid} == {"invalid_row"}
    assert all(r["drop_detail"] for r in res.invalid)


def test_existing_log_is_appended_not_wiped(tmp_path):
    log = tmp_path / "d.jsonl"
    log.write_bytes(b'{"old": 1}\n')
    QualityPreprocessor([HardFilter()], dropped_log_path=log)([chat("hi", "Hello")])
    assert len(log.read_bytes().splitlines()) == 2


def test_columns_input_and_heterogeneous_rows():
    cols = {"messages": [GOOD["messages"], GOOD["messages"]], "id": ["a", "b"]}
    res = QualityPreprocessor([HardFilter()])(cols)
    assert [r["id"] for r in res.kept] == ["a", "b"]
    res = QualityPreprocessor([HardFilter()])([GOOD, {**GOOD, "extra": 1}])
    assert res.kept[1]["extra"] == 1 and "extra" not in res.kept[0]


def test_empty_input_gives_empty_result():
    res = QualityPreprocessor([HardFilter()])([])
    assert res.kept == [] and res.total_in == 0 and res.stats[0].rows_in == 0
