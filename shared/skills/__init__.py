"""Skills: the YAML spec, its audit and the scorers its reward weights name."""

from shared.skills.audit import (
    MAX_FIELD_CHARS,
    AuditReport,
    Violation,
    answer_fields_from_text,
    audit_answer,
    coerce_rules,
)
from shared.skills.scoring import (
    CallRecord,
    FieldF1,
    Rubric,
    ToolAccuracy,
    answer_truth,
    combine,
    field_f1,
    normalise_value,
    reasoning_rubric,
    tool_accuracy,
)
from shared.skills.spec import (
    SKILL_WEIGHT_KEYS,
    AnswerFormat,
    AuditRule,
    SkillSpec,
    load_skill_file,
    parse_skill,
    validation_message,
)

__all__ = [
    "MAX_FIELD_CHARS",
    "SKILL_WEIGHT_KEYS",
    "AnswerFormat",
    "AuditReport",
    "AuditRule",
    "CallRecord",
    "FieldF1",
    "Rubric",
    "SkillSpec",
    "ToolAccuracy",
    "Violation",
    "answer_fields_from_text",
    "answer_truth",
    "audit_answer",
    "coerce_rules",
    "combine",
    "field_f1",
    "load_skill_file",
    "normalise_value",
    "parse_skill",
    "reasoning_rubric",
    "tool_accuracy",
    "validation_message",
]
