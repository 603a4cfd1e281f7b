from __future__ import annotations

from services.envs.skill_audit import MAX_FIELD_CHARS, audit_answer, compile_rules


def test_audit_scores_format_and_rules() -> None:
    rules = compile_rules({"order_id": r"^[A-Z]{2}-\d{4}$", "status": "^(shipped|pending)$"})
    good = audit_answer(
        {"order_id": "AB-1234", "status": "shipped"},
        required_fields=["order_id", "status"],
        rules=rules,
    )
    assert (good.format_score, good.audit_score, good.missing, good.failed) == (1.0, 1.0, [], [])
    bad = audit_answer({"order_id": "ab-1"}, required_fields=["order_id", "status"], rules=rules)
    assert bad.missing == ["status"] and sorted(bad.failed) == ["order_id", "status"]
    assert (bad.format_score, bad.audit_score) == (0.5, 0.0)


def test_overlong_field_fails_without_running_the_regex() -> None:
    rules = compile_rules({"x": ".*"})
    report = audit_answer({"x": "a" * (MAX_FIELD_CHARS + 1)}, required_fields=[], rules=rules)
    assert report.failed == ["x"] and report.format_score == 1.0
