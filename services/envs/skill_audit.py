"""Audit of a skill answer: required fields present and each field matching its regex.

Kept deliberately small; the reward library's ``audit`` component can replace it.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["AuditReport", "audit_answer", "compile_rules"]

# Model output is untrusted; a length cap bounds the cost of any rule on it.
MAX_FIELD_CHARS = 2000


class AuditReport(BaseModel):
    """Per-field outcome of an audit and the two scores the reward weights combine."""

    missing: list[str] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)
    format_score: float = 0.0
    audit_score: float = 0.0


def compile_rules(rules: dict[str, str]) -> dict[str, re.Pattern[str]]:
    """Compile audit regexes once, when the skill is loaded."""
    return {field: re.compile(pattern) for field, pattern in rules.items()}


def audit_answer(
    answer: dict[str, Any], *, required_fields: list[str], rules: dict[str, re.Pattern[str]]
) -> AuditReport:
    """Check presence of required fields (format) and full regex matches (audit)."""
    missing = [f for f in required_fields if answer.get(f) in (None, "")]
    failed = [f for f, rx in rules.items() if not _matches(rx, answer.get(f))]
    n_req, n_rules = len(required_fields), len(rules)
    return AuditReport(
        missing=missing,
        failed=failed,
        format_score=1.0 if n_req == 0 else (n_req - len(missing)) / n_req,
        audit_score=1.0 if n_rules == 0 else (n_rules - len(failed)) / n_rules,
    )


def _matches(rx: re.Pattern[str], value: Any) -> bool:
    if value is None:
        return False
    text = str(value)
    return len(text) <= MAX_FIELD_CHARS and rx.fullmatch(text) is not None
