"""Score a cleaning pipeline against labelled rows: accuracy, drop precision/recall, per class and language.

A labelled row is a normal row plus ``label`` (``"keep"`` or ``"drop"``) and optional
``lang`` and ``class`` keys used to group the scores. Unreadable rows count as drops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from services.cleaning.base import Row, Step
from services.cleaning.runner import clean_batch

__all__ = ["GroupScore", "LabelledScores", "Miss", "score_labelled"]

_ID = "_tf_label_index"


class GroupScore(BaseModel):
    """Correct verdicts over rows of one group."""

    rows: int
    correct: int

    @property
    def accuracy(self) -> float:
        """Share of rows with the labelled verdict (1.0 for an empty group)."""
        return self.correct / self.rows if self.rows else 1.0


class Miss(BaseModel):
    """A row whose verdict differs from its label."""

    id: str
    lang: str
    cls: str
    label: str
    reason: str | None = Field(None, description="drop reason when the pipeline dropped it")


class LabelledScores(BaseModel):
    """Scores of one pipeline over one labelled set."""

    rows: int
    accuracy: float
    drop_precision: float
    drop_recall: float
    by_lang: dict[str, GroupScore]
    by_class: dict[str, GroupScore]
    misses: list[Miss]

    def table(self) -> str:
        """The scores as aligned text lines (for benches and test failures)."""
        lines = [f"rows {self.rows}  accuracy {self.accuracy:.3f}  drop precision {self.drop_precision:.3f}  "
                 f"drop recall {self.drop_recall:.3f}"]
        for title, groups in (("language", self.by_lang), ("class", self.by_class)):
            lines.append(f"  by {title}:")
            lines += [f"    {k:<22}{g.correct:>4}/{g.rows:<4} {g.accuracy:.3f}" for k, g in sorted(groups.items())]
        lines += [f"  miss {m.id} (label {m.label}, got {m.reason or 'keep'})" for m in self.misses]
        return "\n".join(lines)


def _bump(groups: dict[str, GroupScore], key: str, ok: bool) -> None:
    g = groups.setdefault(key, GroupScore(rows=0, correct=0))
    g.rows += 1
    g.correct += ok


def score_labelled(labelled: Sequence[dict[str, Any]], steps: Sequence[Step]) -> LabelledScores:
    """Run ``steps`` over the labelled rows and compare each verdict with its label."""
    rows: list[Row] = []
    for i, r in enumerate(labelled):
        row = {k: v for k, v in r.items() if k not in ("label", "lang", "class", "note", "source")}
        row[_ID] = i
        rows.append(row)
    result = clean_batch(rows, steps)
    reasons: dict[int, str] = {int(r[_ID]): str(r.get("drop_reason")) for r in result.dropped + result.invalid
                               if _ID in r}
    by_lang: dict[str, GroupScore] = {}
    by_class: dict[str, GroupScore] = {}
    misses: list[Miss] = []
    tp = fp = fn = correct = 0
    for i, r in enumerate(labelled):
        dropped = i in reasons
        want = r["label"] == "drop"
        ok = dropped == want
        correct += ok
        tp += dropped and want
        fp += dropped and not want
        fn += want and not dropped
        lang, cls = str(r.get("lang", "-")), str(r.get("class", "-"))
        _bump(by_lang, lang, ok)
        _bump(by_class, f"{cls}/{r['label']}", ok)
        if not ok:
            misses.append(Miss(id=str(r.get("id", i)), lang=lang, cls=cls, label=r["label"], reason=reasons.get(i)))
    n = len(labelled)
    return LabelledScores(rows=n, accuracy=correct / n if n else 1.0,
                          drop_precision=tp / (tp + fp) if tp + fp else 1.0,
                          drop_recall=tp / (tp + fn) if tp + fn else 1.0,
                          by_lang=by_lang, by_class=by_class, misses=misses)
