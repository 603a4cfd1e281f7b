"""Analyzer construction: blank pipelines offline, every language gets every pattern recognizer."""

from __future__ import annotations

import pytest

from services.cleaning.pii_engine import build_analyzer, model_installed, parse_spacy_models
from shared.errors import ValidationFailed


def test_every_language_gets_the_pattern_recognizers() -> None:
    analyzer = build_analyzer(["en", "zh"])
    for lang in ("en", "zh"):
        entities = set(analyzer.get_supported_entities(language=lang))
        assert {
            "EMAIL_ADDRESS",
            "CREDIT_CARD",
            "CN_ID",
            "CN_PHONE",
            "KR_RRN",
            "JP_PHONE",
        } <= entities
    hits = analyzer.analyze("邮箱 li@qq.com", language="zh", entities=["EMAIL_ADDRESS"])
    assert [h.entity_type for h in hits] == ["EMAIL_ADDRESS"]


def test_spacy_models_must_name_configured_languages() -> None:
    with pytest.raises(ValidationFailed, match="not configured"):
        build_analyzer(["en"], spacy_models={"de": "de_core_news_sm"})
    assert not model_installed("en_core_web_sm_missing_pkg")


def test_parse_spacy_models() -> None:
    assert parse_spacy_models(" en=en_core_web_sm, zh=zh_core_web_sm ") == {
        "en": "en_core_web_sm",
        "zh": "zh_core_web_sm",
    }
    assert parse_spacy_models("") == {}
    with pytest.raises(ValidationFailed):
        parse_spacy_models("en_core_web_sm")
