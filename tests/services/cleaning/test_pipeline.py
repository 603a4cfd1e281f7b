import orjson

from services.cleaning.pipeline import DEFAULT_PIPELINE_NAMES, default_pipeline
from services.cleaning.preprocessor import QualityPreprocessor
from tests.services.cleaning.builders import data_dir

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


def test_ordinary_korean_and_japanese_prose_pass_the_default_pipeline():
    from services.cleaning.pipeline import default_pipeline
    ko = ("다음 주에 서울에서 열리는 음악 축제에 대해 알려 주세요. 어떤 공연이 있는지 궁금해요.",
          "다음 주 서울 음악 축제에서는 어쿠스틱 공연과 오케스트라 공연이 열립니다. 어린이를 위한 음악 교실도 있고, "
          "저녁에는 야외 무대에서 밴드 공연이 이어집니다. 어떤 장르를 좋아하시는지 알려 주시면 더 추천해 드릴게요.")
    ja = ("東京で週末に楽しめる場所を教えてください。家族で行ける所がいいです。",
          "週末の東京なら、上野動物園や国立科学博物館が家族連れに人気です。浅草では食べ歩きも楽しめますし、"
          "お台場の公園で遊ぶこともできます。天気が悪い日は、水族館や屋内の遊び場もおすすめです。")
    rows = [{"id": "ko", "messages": [{"role": "user", "content": ko[0]}, {"role": "assistant", "content": ko[1]}]},
            {"id": "ja", "messages": [{"role": "user", "content": ja[0]}, {"role": "assistant", "content": ja[1]}]}]
    res = QualityPreprocessor(default_pipeline())(rows)
    assert [r["id"] for r in res.kept] == ["ko", "ja"], res.dropped
