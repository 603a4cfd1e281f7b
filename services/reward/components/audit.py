"""Skill audits: required answer fields and per-field rules, run by the shared audit.

The rules are the skill YAML's ``audit_rules`` in either form (a list of
``{field, pattern}`` or a mapping ``{field: pattern}``). An allow rule holds
when the field's whole value matches, so a matching value is never an audit
hit; ``forbid: true`` makes a deny rule (a match is the hit). The env's skill
audit runs the same function (``shared.skills.audit``), so the two agree.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from services.reward.components.skill import read_episode
from services.reward.registry import ComponentResult, ParamsModel, reward_component
from shared.schema import Trajectory
from shared.skills import AnswerFormat, AuditRule, answer_fields_from_text, audit_answer

__all__ = ["AuditParams", "audit_answer", "parse_answer_fields"]

#: Kept under its old name: the fields of a JSON-object answer in text.
parse_answer_fields = answer_fields_from_text


class AuditParams(ParamsModel):
    """Params of ``audit``: the skill's answer format and rules, and which score to report."""

    answer_format: AnswerFormat = Field(default_factory=AnswerFormat)
    audit_rules: list[AuditRule] | dict[str, str] = Field(default_factory=list)
    #: ``pass``: 1 when nothing is missing and no rule is broken; ``format``: share of required fields
    #: present; ``rules``: share of rules held (the skill env's ``format`` and ``audit`` weights).
    measure: Literal["pass", "format", "rules"] = "pass"
    family: str = "auto"


@reward_component(name="audit", version="2", params=AuditParams)
def audit_component(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    """Audit the answer (``submit_answer`` arguments, else the final JSON reply) against the skill."""
    p = AuditParams.model_validate(params)
    answer = read_episode(traj, family=p.family).answer
    report = audit_answer(answer, required_fields=p.answer_format.required_fields, rules=p.audit_rules)
    metrics = {"missing_fields": float(len(report.missing)), "audit_hits": float(len(report.violations)),
               "format_score": report.format_score, "audit_score": report.audit_score}
    passed = float(not report.missing and not report.violations)
    score = {"pass": passed, "format": report.format_score, "rules": report.audit_score}[p.measure]
    return ComponentResult(score=score, metrics=metrics,
                           info={"hits": [v.model_dump() for v in report.violations], "missing": report.missing})
