"""The cleaning step contract shared by every filter, mapper and annotator.

A step takes rows (plain dicts in OpenAI chat shape, or a dict of columns)
and returns ``(kept, dropped)``. Dropped rows are shallow copies carrying
``drop_reason``, ``drop_step`` and, where the step can say what fired,
``drop_evidence``; kept rows keep their input order and every
key they came with.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

__all__ = ["Row", "Step", "StepOutput", "as_rows"]

Row = dict[str, Any]
StepOutput = tuple[list[Row], list[Row]]


def as_rows(data: Sequence[Row] | Mapping[str, Sequence[Any]]) -> list[Row]:
    """Rows from a list of dicts or from a dict of columns (row count from the first column)."""
    if isinstance(data, Mapping):
        if not data:
            return []
        keys = list(data)
        n = len(data[keys[0]])
        return [{k: data[k][i] for k in keys} for i in range(n)]
    return list(data)


class Step(ABC):
    """Base of every cleaning step. Override ``process``; call the step on rows."""

    #: Registry name; defaults to the class name.
    name: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("name"):
            cls.name = cls.__name__

    def __call__(self, data: Sequence[Row] | Mapping[str, Sequence[Any]]) -> StepOutput:
        return self.process(as_rows(data))

    @abstractmethod
    def process(self, rows: list[Row]) -> StepOutput:
        """Split rows into kept and dropped; override in each step."""

    def drop(self, row: Row, reason: str, evidence: dict[str, Any] | None = None) -> Row:
        """A shallow copy of ``row`` marked as dropped by this step for ``reason``.

        ``evidence`` says what fired (the check, the matched window, a density, a repeated
        n-gram, the scripts mixed...); it travels with the row as ``drop_evidence``.
        """
        out = dict(row)
        out["drop_reason"] = reason
        out["drop_step"] = self.name
        if evidence is not None:
            out["drop_evidence"] = evidence
        return out
