"""Audit component: required fields and per-field rules (allow by default, ``forbid`` for deny rules)."""

from __future__ import annotations

from services.reward.components.audit import parse_answer_fields
from services.reward.registry import get_component
from shared.skills import audit_answer

DENY = [{"field": "answer", "pattern": r"(?i)\bas an ai\b", "name": "disclaimer", "forbid": True},
        {"field": "sources", "pattern": r"http://", "name": "insecure_link", "forbid": True}]


def test_fields_from_json_and_fenced_json() -> None:
    assert parse_answer_fields('{"answer": "x"}') == {"answer": "x"}
    assert parse_answer_fields('```json\n{"answer": "y"}\n```') == {"answer": "y"}
    assert parse_answer_fields('Because of X, the answer is {"answer": "z"}') == {"answer": "z"}
    assert parse_answer_fields("not json") == {}


def test_forbid_rules_fire_on_a_match_and_missing_fields_are_recorded() -> None:
    report = audit_answer({"answer": "As an AI I think 4", "sources": "http://x"},
                          required_fields=["answer", "confidence"], rules=DENY)
    assert report.missing == ["confidence"]
    assert [v.name for v in report.violations] == ["disclaimer", "insecure_link"]


def test_audit_component_scores(make_traj) -> None:
    comp = get_component("audit")
    params = {"answer_format": {"required_fields": ["answer"]}, "audit_rules": DENY}
    clean = comp(make_traj('{"answer": "4", "sources": "https://x"}'), {}, **params)
    assert clean.score == 1.0 and clean.info["hits"] == []
    dirty = comp(make_traj('{"answer": "as an AI, 4"}'), {}, **params)
    assert dirty.score == 0.0 and dirty.info["hits"][0]["field"] == "answer"


def test_allow_rule_match_is_not_a_hit(make_traj) -> None:
    comp = get_component("audit")
    params = {"audit_rules": [{"field": "ec_number", "pattern": r"^\d+\.\d+\.\d+\.\d+$"}]}
    good = comp(make_traj('{"ec_number": "1.1.1.1"}'), {}, **params)
    assert good.metrics["audit_hits"] == 0.0 and good.score == 1.0
    bad = comp(make_traj('{"ec_number": "1.1.1"}'), {}, **params)
    assert bad.metrics["audit_hits"] == 1.0 and bad.score == 0.0
