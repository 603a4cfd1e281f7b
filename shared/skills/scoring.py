"""The scorers a skill's ``reward_weights`` name, on plain data (env and reward service share them).

``tool_accuracy``  tool-call correctness over the whole episode. A call is
                   correct when its arguments were readable, its tool is one
                   the skill allows, its arguments fit the tool's schema
                   (required keys present, no unknown keys, JSON types) and its
                   result was not an error. With expected calls in the ground
                   truth the score is the F1 of correct calls matched to them
                   (same name, every expected argument equal); without, it is
                   the share of correct calls. An episode with no calls scores
                   0 when the skill has tools to use, 1 when it has none.
``answer_f1``      field-level F1 of the answer against the ground-truth
                   fields: a field counts when its normalised value equals the
                   truth's (case, spacing and number formatting ignored; lists
                   as sets).
``reasoning_quality`` a fixed rubric over the reasoning text; the score is the
                   share of the applicable criteria met (0 for no reasoning):
                   ``substantive`` (at least 8 words), ``grounded`` (shares at
                   least two content words with the tool observations; only
                   when there were observations), ``concludes`` (every answer
                   value is stated in the reasoning; only when there is an
                   answer), ``non_repetitive`` (at least 60% distinct word
                   trigrams) and ``bounded`` (at most ``max_words`` words).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["CallRecord", "FieldF1", "Rubric", "ToolAccuracy", "answer_truth", "combine", "field_f1",
           "normalise_value", "reasoning_rubric", "tool_accuracy"]

_WORD = re.compile(r"\w+", re.UNICODE)
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "array": (list, tuple), "object": (dict,), "null": (type(None),),
}


class CallRecord(BaseModel):
    """One tool call of an episode: name, parsed arguments (None if unreadable), result ok."""

    name: str
    arguments: dict[str, Any] | None = None
    ok: bool | None = None


class ToolAccuracy(BaseModel):
    """Tool-call correctness over an episode."""

    score: float
    calls: int
    correct: int
    matched: int | None = None
    expected: int | None = None
    problems: list[str] = Field(default_factory=list)


class FieldF1(BaseModel):
    """Field-level precision, recall and F1 of an answer."""

    precision: float
    recall: float
    f1: float
    correct: list[str] = Field(default_factory=list)


class Rubric(BaseModel):
    """The reasoning rubric's score and each applicable criterion's verdict."""

    score: float
    criteria: dict[str, bool] = Field(default_factory=dict)
    words: int = 0


def _fits(value: Any, kind: Any) -> bool:
    kinds = kind if isinstance(kind, list) else [kind]
    if not kinds or any(k not in _JSON_TYPES for k in kinds):
        return True  # an unknown or absent type constrains nothing
    if isinstance(value, bool) and "boolean" not in kinds:
        return False
    return isinstance(value, tuple(t for k in kinds for t in _JSON_TYPES[k]))


def _call_problem(call: CallRecord, allowed: set[str] | None, schemas: Mapping[str, dict[str, Any]]) -> str | None:
    if call.arguments is None:
        return f"{call.name}: arguments unreadable"
    if allowed is not None and call.name not in allowed:
        return f"{call.name}: tool not available"
    schema = schemas.get(call.name) or {}
    props = schema.get("properties") or {}
    missing = [k for k in schema.get("required") or [] if k not in call.arguments]
    if missing:
        return f"{call.name}: missing {', '.join(missing)}"
    if props and (unknown := [k for k in call.arguments if k not in props]):
        return f"{call.name}: unknown argument {', '.join(unknown)}"
    if bad := [k for k, v in call.arguments.items() if k in props and not _fits(v, props[k].get("type"))]:
        return f"{call.name}: wrong type for {', '.join(bad)}"
    if call.ok is False:
        return f"{call.name}: the tool returned an error"
    return None


def _args_match(got: dict[str, Any], want: Mapping[str, Any]) -> bool:
    return all(k in got and normalise_value(got[k]) == normalise_value(v) for k, v in want.items())


def _matched(calls: list[CallRecord], expected: Sequence[Mapping[str, Any]]) -> int:
    unused = list(range(len(calls)))
    hits = 0
    for want in expected:
        name, args = str(want.get("name", "")), dict(want.get("arguments") or {})
        hit = next((i for i in unused if calls[i].name == name and _args_match(calls[i].arguments or {}, args)), None)
        if hit is not None:
            unused.remove(hit)
            hits += 1
    return hits


def tool_accuracy(calls: Sequence[CallRecord], *, available_tools: Sequence[str] | None = None,
                  schemas: Mapping[str, dict[str, Any]] | None = None,
                  expected: Sequence[Mapping[str, Any]] | None = None) -> ToolAccuracy:
    """Tool-call correctness over an episode (see the module docstring)."""
    allowed = set(available_tools) if available_tools is not None else None
    problems = [p for c in calls if (p := _call_problem(c, allowed, schemas or {})) is not None]
    correct = [c for c in calls if _call_problem(c, allowed, schemas or {}) is None]
    if expected is not None:
        matched = _matched(correct, expected)
        if not expected and not calls:
            score = 1.0
        else:
            precision = matched / len(calls) if calls else 0.0
            recall = matched / len(expected) if expected else 0.0
            score = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
        return ToolAccuracy(score=score, calls=len(calls), correct=len(correct), matched=matched,
                            expected=len(expected), problems=problems)
    # No calls: nothing was done right when there were tools to use; nothing was needed when there were none.
    score = len(correct) / len(calls) if calls else (0.0 if allowed is None or allowed else 1.0)
    return ToolAccuracy(score=score, calls=len(calls), correct=len(correct), problems=problems)


def normalise_value(value: Any) -> Any:
    """Comparable form of an answer value: numbers as floats, text folded, lists as sets."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list | tuple | set):
        return frozenset(normalise_value(v) for v in value if not isinstance(v, dict | list))
    if isinstance(value, dict):
        return tuple(sorted((str(k), str(normalise_value(v))) for k, v in value.items()))
    text = " ".join(str(value).casefold().split())
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def _present(value: Any) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def answer_truth(ground_truth: Mapping[str, Any], fields: Sequence[str] = ()) -> dict[str, Any]:
    """Ground-truth answer fields: ``answer`` when it is a mapping, else the named top-level fields."""
    answer = ground_truth.get("answer")
    if isinstance(answer, Mapping):
        return dict(answer)
    return {f: ground_truth[f] for f in fields if f in ground_truth}


def field_f1(answer: Mapping[str, Any], truth: Mapping[str, Any], *, fields: Sequence[str] | None = None) -> FieldF1:
    """Field-level F1 of ``answer`` against ``truth`` over ``fields`` (default: the truth's fields)."""
    keys = list(fields) if fields else list(truth)
    gold = {k: truth[k] for k in keys if _present(truth.get(k))}
    if not gold:
        raise ValueError("the ground truth has no answer fields to compare with")
    predicted = [k for k in keys if _present(answer.get(k))]
    correct = [k for k in predicted if k in gold and normalise_value(answer[k]) == normalise_value(gold[k])]
    precision = len(correct) / len(predicted) if predicted else 0.0
    recall = len(correct) / len(gold)
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return FieldF1(precision=precision, recall=recall, f1=f1, correct=correct)


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if len(w) >= 3 or any(ch.isdigit() for ch in w)}


def _distinct_trigrams(tokens: list[str]) -> float:
    grams = [tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)]
    return 1.0 if not grams else len(set(grams)) / len(grams)


def reasoning_rubric(reasoning: str, *, answer: Mapping[str, Any] | None = None,
                     observations: Sequence[str] = (), max_words: int = 512) -> Rubric:
    """Score reasoning text with the rubric of the module docstring."""
    tokens = _WORD.findall(reasoning.casefold())
    if not tokens:
        return Rubric(score=0.0, criteria={"substantive": False})
    criteria = {"substantive": len(tokens) >= 8,
                "non_repetitive": _distinct_trigrams(tokens) >= 0.6,
                "bounded": len(tokens) <= max_words}
    seen = " ".join(observations)
    if seen.strip():
        criteria["grounded"] = len(_content_words(reasoning) & _content_words(seen)) >= 2
    values = [str(v) for v in (answer or {}).values() if _present(v) and not isinstance(v, dict | list)]
    if values:
        folded = " ".join(reasoning.casefold().split())
        criteria["concludes"] = all(" ".join(v.casefold().split()) in folded for v in values)
    return Rubric(score=sum(criteria.values()) / len(criteria), criteria=criteria, words=len(tokens))


def combine(weights: Mapping[str, float], scores: Mapping[str, float | None]) -> tuple[float, list[str]]:
    """Σ weight·score over the weights; scorers that could not run (None) add 0 and are listed."""
    total, unscored = 0.0, []
    for key, weight in weights.items():
        value = scores.get(key)
        if value is None:
            unscored.append(key)
        else:
            total += weight * value
    return total, unscored
