"""Span resolution and replacement strategies."""

from __future__ import annotations

from services.cleaning.pii_replace import (
    Span,
    apply_spans,
    fake_value,
    hash_token,
    mask,
    resolve_spans,
)


def test_resolve_spans_threshold_ignored_overlap_and_min_length() -> None:
    hits = [
        Span("URL", 0, 30, 0.9),
        Span("EMAIL_ADDRESS", 10, 30, 0.8),
        Span("PHONE_NUMBER", 12, 20, 0.7),
        Span("IP_ADDRESS", 40, 42, 0.9),
        Span("CN_PHONE", 50, 61, 0.4),
    ]
    kept = resolve_spans(hits, threshold=0.5, ignored=frozenset({"URL"}))
    assert kept == [Span("EMAIL_ADDRESS", 10, 30, 0.8)]


def test_mask_examples_from_the_reference() -> None:
    assert mask("13800138000") == "138****8000"
    assert mask("4532015112830366") == "453*********0366"
    assert mask("1234567") == "*******"


def test_fakes_are_seeded_and_hash_is_salted() -> None:
    a = fake_value("EMAIL_ADDRESS", "x@y.com", locale="en_US", seed="row1")
    assert a == fake_value("EMAIL_ADDRESS", "x@y.com", locale="en_US", seed="row1")
    assert a != fake_value("EMAIL_ADDRESS", "x@y.com", locale="en_US", seed="row2")
    other = fake_value("CN_ID", "11010519491231002X", locale="zh_CN", seed="r")
    assert len(other) == 18 and other.isupper() and other != "11010519491231002X"
    assert hash_token("CN_ID", "v", "s1") != hash_token("CN_ID", "v", "s2")


def test_apply_spans_right_strategy_per_entity() -> None:
    text = "a 13800138000 b x@y.com c"
    spans = [Span("CN_PHONE", 2, 13, 1.0), Span("EMAIL_ADDRESS", 16, 23, 1.0)]
    out = apply_spans(
        text, spans, {"EMAIL_ADDRESS": "redact"}, default="mask", locale="en_US", seed="s", salt=""
    )
    assert out == "a 138****8000 b  c"
