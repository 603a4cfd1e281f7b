"""The one audit of a skill answer, used by the skill env and by the reward ``audit`` component.

Format: each required field present and non-empty. Rules: an allow rule's
field must match its pattern in full (a matching value is *not* a violation);
a ``forbid`` rule's field must contain no match. Each violation is reported
with its field, pattern and reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field

from shared.skills.spec import AuditRule

__all__ = ["MAX_FIELD_CHARS", "AuditReport", "Violation", "answer_fields_from_text", "audit_answer", "coerce_rules"]

# Model output is untrusted; a length cap bounds the cost of any rule on it.
MAX_FIELD_CHARS = 2000


class Violation(BaseModel):
    """One rule that the answer broke."""

    field: str
    pattern: str
    name: str = ""
    reason: str


class AuditReport(BaseModel):
    """Per-field outcome of an audit and the two scores skill reward weights combine."""

    missing: list[str] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)
    violations: list[Violation] = Field(default_factory=list)
    format_score: float = 0.0
    audit_score: float = 0.0


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def coerce_rules(rules: Sequence[AuditRule | dict[str, Any]] | dict[str, str] | None) -> list[AuditRule]:
    """Rules in either YAML form (list of ``{field, pattern}`` or ``{field: pattern}``) as models."""
    if rules is None:
        return []
    if isinstance(rules, dict):
        return [AuditRule(field=str(k), pattern=str(v)) for k, v in rules.items()]
    return [r if isinstance(r, AuditRule) else AuditRule.model_validate(r) for r in rules]


def _present(value: Any) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def _check(rule: AuditRule, value: Any) -> str | None:
    """The reason ``rule`` is broken by ``value``, or None when it holds."""
    if not _present(value):
        return None if rule.forbid else "field is missing"
    text = str(value)
    if len(text) > MAX_FIELD_CHARS:
        return f"value longer than {MAX_FIELD_CHARS} characters"
    rx = _compiled(rule.pattern)
    if rule.forbid:
        return "value matches a forbidden pattern" if rx.search(text) else None
    return None if rx.fullmatch(text) else "value does not match the pattern"


def audit_answer(answer: dict[str, Any], *, required_fields: Sequence[str],
                 rules: Sequence[AuditRule | dict[str, Any]] | dict[str, str]) -> AuditReport:
    """Check required fields (format score) and every rule (audit score = share of rules held)."""
    compiled = coerce_rules(rules)
    missing = [f for f in required_fields if not _present(answer.get(f))]
    violations = []
    for rule in compiled:
        reason = _check(rule, answer.get(rule.field))
        if reason is not None:
            violations.append(Violation(field=rule.field, pattern=rule.pattern, name=rule.name, reason=reason))
    n_req, n_rules = len(required_fields), len(compiled)
    return AuditReport(
        missing=missing,
        failed=list(dict.fromkeys(v.field for v in violations)),
        violations=violations,
        format_score=1.0 if n_req == 0 else (n_req - len(missing)) / n_req,
        audit_score=1.0 if n_rules == 0 else (n_rules - len(violations)) / n_rules,
    )


def answer_fields_from_text(text: str) -> dict[str, Any]:
    """Fields of a JSON-object answer in text (a fenced ``json`` block or a trailing object allowed)."""
    body = text.strip()
    fence = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", body, re.S)
    candidates = [fence.group(1)] if fence else []
    candidates.append(body)
    start = body.find("{")
    if start > 0:
        candidates.append(body[start:body.rfind("}") + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return {}
