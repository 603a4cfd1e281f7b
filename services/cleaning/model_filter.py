"""ModelFilter: keep rows whose model id belongs to an allowed teacher family."""

from __future__ import annotations

import re

from pydantic import AliasChoices, Field

from services.cleaning.base import Row, StepOutput
from services.cleaning.params import ParamStep, StepParams

__all__ = ["DEFAULT_MODEL_PATTERNS", "ModelFilter"]

_TAIL = r"[\w.\-]*"

#: Family prefixes (org required); each may be followed by a variant tail.
DEFAULT_MODEL_PATTERNS: tuple[str, ...] = (
    r"minimax/minimax-m[23]",
    r"opengvlab/internvl[\w.\-]*-[123]\d\db",
    r"qwen/qwen3[\w.\-]*?-[123]\d\db(?:-a\d+b)?",
    r"qwen/qwen3-coder",
    r"xiaomimimo/mimo-v",
    r"(?:zhipuai|z-ai)/glm-[56]",
    r"deepseek-ai/deepseek-(?:r1|v3|v4)",
    r"moonshotai/kimi",
    r"stepfun-ai/step",
)


class ModelFilterParams(StepParams):
    """Parameters of ModelFilter; ``allowed_models`` is the documented alias of ``patterns``."""

    patterns: list[str] | None = Field(
        None, validation_alias=AliasChoices("patterns", "allowed_models"),
        description="Regex family prefixes (full, case-insensitive match); None = defaults.",
    )
    field: str = Field("model_id", description="Row key holding the model id.")


class ModelFilter(ParamStep[ModelFilterParams]):
    """Drop rows whose model id does not fully match an allowed family (``model_not_allowed``)."""

    Params = ModelFilterParams

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        pats = self.params.patterns or list(DEFAULT_MODEL_PATTERNS)
        alt = "|".join(f"(?:{p}){_TAIL}" for p in pats)
        self._re = re.compile(f"(?:{alt})", re.I)

    def process(self, rows: list[Row]) -> StepOutput:
        """Keep rows whose model id matches."""
        kept, dropped = [], []
        for row in rows:
            value = row.get(self.params.field) or ""
            if isinstance(value, str) and self._re.fullmatch(value):
                kept.append(row)
            else:
                dropped.append(self.drop(row, "model_not_allowed", {"check": "model_not_allowed",
                                                                    "field": self.params.field, "value": value}))
        return kept, dropped
