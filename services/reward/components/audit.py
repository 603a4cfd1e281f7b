"""Skill audits: required answer fields and regex rules per field, each hit recorded."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from services.reward.components.answer import final_text
from services.reward.registry import ComponentResult, reward_component
from shared.schema import Trajectory

__all__ = ["audit_answer", "parse_answer_fields"]

_MAX_FIELD_CHARS = 20_000


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def parse_answer_fields(text: str) -> dict[str, Any]:
    """Fields of a JSON-object answer (a fenced ``json`` block allowed); ``{}`` otherwise."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body[4:] if body.startswith("json") else body
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def audit_answer(fields: dict[str, Any], required: list[str],
                 rules: list[dict[str, Any]]) -> tuple[dict[str, float], list[dict[str, str]]]:
    """Metrics and hits: missing required fields, and every rule whose regex matched a field."""
    missing = [f for f in required if f not in fields or fields[f] in (None, "")]
    hits = []
    for rule in rules:
        field = str(rule.get("field", ""))
        # Output is bounded before matching, so a costly pattern cannot stall the scorer.
        text = str(fields.get(field, ""))[:_MAX_FIELD_CHARS]
        if text and _compiled(str(rule["pattern"])).search(text):
            hits.append({"field": field, "pattern": str(rule["pattern"]), "name": str(rule.get("name", ""))})
    metrics = {"missing_fields": float(len(missing)), "audit_hits": float(len(hits))}
    return metrics, hits


@reward_component(name="audit", version="1")
def audit_component(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    """1.0 when every required field is present and no audit rule fires, else 0.0."""
    fields = parse_answer_fields(final_text(traj))
    answer_format = params.get("answer_format") or {}
    metrics, hits = audit_answer(fields, list(answer_format.get("required_fields") or []),
                                 list(params.get("audit_rules") or []))
    score = float(metrics["missing_fields"] == 0 and metrics["audit_hits"] == 0)
    return ComponentResult(score=score, metrics=metrics, info={"hits": hits})
