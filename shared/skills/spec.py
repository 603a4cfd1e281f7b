"""The skill YAML: tools, round budget, answer format, audit rules and reward weights.

A skill file, as the Agent Harness writes it::

    skill_name: enzyme_catalysis
    available_tools: [CLEAN, mmseqs2, UniProt_API]
    max_rounds: 8
    answer_format:
      required_fields: ["ec_number", "substrate", "product"]
    audit_rules:
      - field: "ec_number"
        pattern: "^\\d+\\.\\d+\\.\\d+\\.\\d+$"
    reward_weights:
      tool_accuracy: 0.3
      answer_f1: 0.4
      reasoning_quality: 0.3

``audit_rules`` is also accepted as a mapping ``{field: pattern}`` (trajforge's
older, shorter form). A rule is an *allow* rule: the field's whole value must
match the pattern, so a matching value is never a violation. ``forbid: true``
turns a rule into a deny rule (the field must contain no match), for patterns
such as disclaimers or insecure links.

``reward_weights`` keys name real scorers (``shared.skills.scoring``):
``tool_accuracy``, ``answer_f1``, ``reasoning_quality``, plus ``format``
(required fields present) and ``audit`` (rules passed). An unknown key, a bad
regex or a wrong type is an ``InvalidInput`` whose message names the field.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shared.errors import InvalidInput

__all__ = ["SKILL_WEIGHT_KEYS", "AnswerFormat", "AuditRule", "SkillSpec", "load_skill_file", "parse_skill",
           "validation_message"]

#: The scorers a skill's ``reward_weights`` may name.
SKILL_WEIGHT_KEYS: tuple[str, ...] = ("tool_accuracy", "answer_f1", "reasoning_quality", "format", "audit")


class AnswerFormat(BaseModel):
    """Fields the final answer must carry."""

    model_config = ConfigDict(extra="forbid")

    required_fields: list[str] = Field(default_factory=list)


class AuditRule(BaseModel):
    """One audit rule on one answer field (allow by default; ``forbid`` for a deny rule)."""

    model_config = ConfigDict(extra="forbid")

    field: str = Field(min_length=1)
    pattern: str
    name: str = ""
    forbid: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        return value


class SkillSpec(BaseModel):
    """A skill as written in YAML (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    skill_name: str = Field(min_length=1)
    description: str = ""
    available_tools: list[str] = Field(default_factory=list)
    max_rounds: int = Field(8, ge=1)
    answer_format: AnswerFormat = Field(default_factory=AnswerFormat)
    audit_rules: list[AuditRule] = Field(default_factory=list)
    reward_weights: dict[str, float] = Field(default_factory=lambda: {"format": 0.5, "audit": 0.5})

    @field_validator("audit_rules", mode="before")
    @classmethod
    def _rules_from_mapping(cls, value: Any) -> Any:
        # The mapping form {field: pattern} is the same rules written shorter.
        if isinstance(value, dict):
            return [{"field": str(k), "pattern": v} for k, v in value.items()]
        return [] if value is None else value

    @field_validator("reward_weights")
    @classmethod
    def _known_weights(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(value) - set(SKILL_WEIGHT_KEYS))
        if unknown:
            raise ValueError(f"unknown reward weight {', '.join(map(repr, unknown))}; "
                             f"known: {', '.join(SKILL_WEIGHT_KEYS)}")
        bad = [k for k, w in value.items() if not math.isfinite(w)]
        if bad:
            raise ValueError(f"weight {bad[0]!r} must be a finite number")
        return value


def validation_message(exc: ValidationError, *, prefix: str = "") -> tuple[str, str]:
    """A one-line sentence per error naming the field (``audit_rules[0].pattern``), and the first field."""
    parts, first = [], ""
    for err in exc.errors():
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
        where = f"{prefix}.{loc}" if prefix and loc else (prefix or loc)
        first = first or where
        msg = str(err["msg"]).removeprefix("Value error, ")
        parts.append(f"{where or 'value'}: {msg}")
    return "; ".join(parts), first


def parse_skill(data: Any, *, source: str = "skill") -> SkillSpec:
    """Validate skill data; a problem is an ``InvalidInput`` naming the field, never a raw dump."""
    if not isinstance(data, dict):
        raise InvalidInput(f"{source}: a skill must be a mapping of fields, got {type(data).__name__}")
    try:
        return SkillSpec.model_validate(data)
    except ValidationError as exc:
        message, field = validation_message(exc)
        raise InvalidInput(f"{source} is not a valid skill: {message}", param=field) from None


def load_skill_file(path: Path) -> SkillSpec:
    """Read and validate a skill YAML file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidInput(f"Cannot read skill {str(path)!r}: {exc}") from exc
    return parse_skill(data, source=f"skill {path.name!r}")
