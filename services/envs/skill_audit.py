"""Audit of a skill answer: the shared audit (``shared.skills.audit``), as the skill env calls it.

The reward service's ``audit`` component runs the same function, so an answer
the env accepts is never an audit hit in the reward.
"""

from __future__ import annotations

from typing import Any

from shared.skills import MAX_FIELD_CHARS, AuditReport, AuditRule, audit_answer, coerce_rules

__all__ = ["MAX_FIELD_CHARS", "AuditReport", "audit_answer", "compile_rules"]


def compile_rules(rules: list[AuditRule] | list[dict[str, Any]] | dict[str, str]) -> list[AuditRule]:
    """Validate audit rules (either YAML form) once, when the skill is loaded."""
    return coerce_rules(rules)
