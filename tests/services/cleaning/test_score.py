import pytest

from services.cleaning.llm import LLMEndpoint
from services.cleaning.score import ScoreFilter
from services.cleaning.scorers import ChrMinScorer
from services.cleaning.user_data import get_user_data, set_user_data
from tests.services.cleaning.fake_openai import serve

CTX = "Please repeat these words: alpha beta gamma delta epsilon zeta eta theta"
EASY = "alpha beta gamma delta epsilon zeta eta theta"  # all in context: chr_min 1.0 (fails 0.47)
HARD = "completely novel answer with entirely unseen words here"  # chr_min 0.0 (passes)


def _row(*answers, key_rounds=None):
    msgs = []
    for a in answers:
        msgs += [{"role": "user", "content": CTX}, {"role": "assistant", "content": a}]
    row = {"id": "r", "messages": msgs}
    if key_rounds is not None:
        row["user_data"] = set_user_data(row, {"key_rounds": key_rounds, "intents": {str(k): "code" for k in key_rounds}})
    return row


@pytest.fixture(scope="module")
def endpoint():
    with serve() as url:
        yield {"base_url": url, "api_key": "test-key"}


def test_rows_without_key_rounds_drop_on_any_failed_round(endpoint):
    f = ScoreFilter(endpoint=endpoint, scorers=[{"name": "ChrMinScorer"}])
    kept, dropped = f([_row(HARD), _row(HARD, EASY)])
    assert [r["id"] for r in kept] == ["r"] and dropped[0]["drop_reason"] == "score_round_failed"
    kept, dropped = ScoreFilter(endpoint=endpoint, scorers=[ChrMinScorer()], drop_row_on_any_fail=False)(
        [_row(HARD, EASY)])
    assert len(kept) == 1


def test_key_rounds_narrow_to_passing_or_drop_all_failed(endpoint):
    f = ScoreFilter(endpoint=endpoint, scorers=[{"name": "ChrMinScorer"}])
    kept, dropped = f([_row(HARD, EASY, key_rounds=[1, 3]), _row(EASY, key_rounds=[1])])
    assert get_user_data(kept[0], "key_rounds") == [1]
    assert dropped[0]["drop_reason"] == "score_all_rounds_failed"


def test_no_scorable_round_and_intent_gating(endpoint):
    f = ScoreFilter(endpoint=endpoint, scorers=[{"name": "ChrMinScorer"}])
    assert f([_row("short", key_rounds=[1])])[1][0]["drop_reason"] == "score_no_context"
    assert f([_row("short")])[0]  # no key rounds, no intent filter: kept
    gated = ScoreFilter(endpoint=endpoint, scorers=[{"name": "ChrMinScorer"}], intents=["math"])
    assert gated([_row(HARD, key_rounds=[1])])[1][0]["drop_reason"] == "score_no_context"
    keep = ScoreFilter(endpoint=endpoint, scorers=[{"name": "ChrMinScorer"}], intents=["math"],
                       keep_if_no_key_rounds=True)
    assert keep([_row(HARD, key_rounds=[1])])[0]


def test_params_are_validated_and_schema_is_json():
    from shared.errors import InvalidInput
    with pytest.raises(InvalidInput):
        ScoreFilter(endpoint={"model": "x"})
    assert "endpoint" in ScoreFilter.Params.model_json_schema()["properties"]
    assert isinstance(ScoreFilter(endpoint=LLMEndpoint(base_url="http://127.0.0.1:9")).client, object)
