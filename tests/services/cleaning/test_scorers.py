import math

import pytest

from services.cleaning.llm import LLMEndpoint, OpenAICompatClient
from services.cleaning.scorers import (
    ChrMinScorer,
    ParaphraseScorer,
    PassNScorer,
    Round,
    RoundFeatures,
    SIFDScorer,
    build_scorer,
    chr_min,
    fetch_features,
    parse_verdict,
    s_ifd,
)
from shared.errors import InvalidInput
from tests.services.cleaning.fake_openai import serve


def _round(tokens, cond, uncond, answer="a b c d e f g"):
    return Round(row_idx=0, asst_idx=1, context=[{"role": "user", "content": "q"}], answer=answer,
                 features=RoundFeatures(tokens=tokens, cond=cond, uncond=uncond))


def test_chr_min_takes_min_delta_per_distinct_token():
    # token "x" helped once (+1) and hurt once (-1): its min is negative.
    deltas = [("x", 1.0), ("x", -1.0), ("y", 0.5), ("z", -0.2)]
    assert chr_min(deltas) == pytest.approx(1 / 3)
    assert chr_min([]) is None


def test_chr_min_scorer_low_score_passes_and_missing_logprobs_are_skipped():
    r = _round(["a", "b", "c", "d"], [None, -1.0, -1.0, -5.0], [-2.0, None, -3.0, -2.0])
    res = ChrMinScorer(threshold=0.47).score([r], None)[0]
    # Only c (delta +2) and d (delta -3) are aligned: 1 of 2 distinct tokens helped.
    assert res.score == pytest.approx(0.5) and res.passed is False
    assert ChrMinScorer(threshold=0.6).score([r], None)[0].passed


def test_sifd_matches_the_exponential_form():
    r = _round(["a", "b", "c", "d"], [-1.0, -1.0, -2.0, -0.5], [-2.0, -1.5, -1.0, -0.5])
    res = SIFDScorer().score([r], None)[0]
    deltas = [1.0, 0.5, -1.0, 0.0]
    assert res.score == pytest.approx(math.exp(-sum(deltas) / 4)) and res.passed
    assert res.extras["s_ifd_50"] == pytest.approx(math.exp(-(1.0 - 1.0) / 2))
    assert s_ifd([2.0, -4.0, 1.0], 75) == pytest.approx(math.exp(-(-4.0 + 2.0) / 2))
    assert not SIFDScorer(ifd_threshold=10.0).score([r], None)[0].passed


@pytest.mark.parametrize(("text", "ok"), [("good <verdict>PASS</verdict>", True), ("<verdict> fail </verdict>", False),
                                          ("so... PASS", True), ("PASS or FAIL?", False), ("", False)])
def test_parse_verdict(text, ok):
    assert parse_verdict(text) is ok


def test_unknown_scorer_and_bad_params():
    with pytest.raises(InvalidInput):
        build_scorer("Nope")
    with pytest.raises(InvalidInput):
        ChrMinScorer(threshold="high")


def test_fetch_features_and_judged_scorers_over_loopback_http():
    with serve() as url:
        client = OpenAICompatClient(LLMEndpoint(base_url=url, api_key="test-key"))
        ctx = [{"role": "user", "content": "repeat: alpha beta gamma delta epsilon zeta eta please"}]
        feats = fetch_features(client, ctx, "alpha beta gamma delta epsilon zeta eta")
        assert feats is not None and len(feats.tokens) == 7
        assert chr_min(feats.deltas()) == pytest.approx(1.0)  # every word was in the context
        assert fetch_features(client, ctx, "too short") is None
        r = Round(row_idx=0, asst_idx=1, context=ctx, answer="repeat: alpha")
        res = PassNScorer(n=2, min_pass=1).score([r], client)[0]
        assert res.score == 1.0 and res.passed and res.extras["n_samples"] == 2
        # The scripted model echoes the injected instruction: mostly words the context lacks.
        para = ParaphraseScorer(chr_min_threshold=0.5).score([r], client)[0]
        assert para.score is not None and para.score < 0.5 and para.passed
        assert not ParaphraseScorer(chr_min_threshold=para.score / 2).score([r], client)[0].passed


def test_passn_without_sampler_passes_every_round():
    r = _round(["a"], [None], [None])
    assert PassNScorer().score([r], None)[0].passed
