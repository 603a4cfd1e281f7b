"""Audit component: required fields and regex rules per field, each hit recorded."""

from __future__ import annotations

from services.reward.components.audit import audit_answer, parse_answer_fields
from services.reward.registry import get_component

RULES = [{"field": "answer", "pattern": r"(?i)\bas an ai\b", "name": "disclaimer"},
         {"field": "sources", "pattern": r"http://", "name": "insecure_link"}]


def test_fields_from_json_and_fenced_json() -> None:
    assert parse_answer_fields('{"answer": "x"}') == {"answer": "x"}
    assert parse_answer_fields('```json\n{"answer": "y"}\n```') == {"answer": "y"}
    assert parse_answer_fields("not json") == {}


def test_hits_and_missing_fields_are_recorded() -> None:
    metrics, hits = audit_answer({"answer": "As an AI I think 4", "sources": "http://x"}, ["answer", "confidence"], RULES)
    assert metrics == {"missing_fields": 1.0, "audit_hits": 2.0}
    assert [h["name"] for h in hits] == ["disclaimer", "insecure_link"]


def test_audit_component_scores(make_traj) -> None:
    comp = get_component("audit")
    params = {"answer_format": {"required_fields": ["answer"]}, "audit_rules": RULES}
    clean = comp(make_traj('{"answer": "4", "sources": "https://x"}'), {}, **params)
    assert clean.score == 1.0 and clean.info["hits"] == []
    dirty = comp(make_traj('{"answer": "as an AI, 4"}'), {}, **params)
    assert dirty.score == 0.0 and dirty.info["hits"][0]["field"] == "answer"
