import orjson

from services.cleaning.pipeline import DEFAULT_PIPELINE_NAMES, default_pipeline
from services.cleaning.preprocessor import QualityPreprocessor
from tests.services.cleaning.helpers import data_dir

PER_FILE = 300


def _head(path, n):
    out = []
    with open(path, "rb") as fh:
        for line in fh:
            if len(out) == n:
                break
            out.append(orjson.loads(line))
    return out


def test_default_pipeline_order():
    assert [s.name for s in default_pipeline()] == list(DEFAULT_PIPELINE_NAMES)


def test_default_pipeline_on_real_rows_loses_nothing_and_keeps_keys():
    files = sorted(data_dir().glob("*.jsonl"))
    assert files
    for path in files:
        rows = _head(path, PER_FILE)
        rows.append({"id": f"{path.stem}-bad", "messages": "not a list"})
        res = QualityPreprocessor(default_pipeline())(rows)
        assert len(res.kept) + len(res.dropped) + len(res.invalid) == len(rows), path.name
        by_id = {r.get("id"): r for r in rows}
        for out in res.kept + res.dropped:
            src = by_id[out["id"]]
            assert set(src) - {"messages"} <= set(out), path.name
        assert res.invalid[-1]["id"] == f"{path.stem}-bad"
