"""Answer correctness: extraction (``\\boxed{}``, ``<answer>``), exact match, token F1, math equivalence."""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any

from pydantic import Field

from services.reward.mathcheck import math_equal
from services.reward.registry import ComponentResult, ParamsModel, reward_component
from shared.schema import Trajectory, content_text
from shared.toolcalls.reasoning import mask_spans, reasoning_spans

__all__ = ["AnswerParams", "exact_match", "extract_answer", "final_text", "normalise_answer", "token_f1"]

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.S)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def final_text(traj: Trajectory) -> str:
    """The last assistant message's text with reasoning removed."""
    for message in reversed(traj.messages):
        if message.role == "assistant":
            text = content_text(message.content)
            return mask_spans(text, reasoning_spans(text)).strip()
    return ""


def _last_boxed(text: str) -> str | None:
    start = text.rfind("\\boxed{")
    if start == -1:
        return None
    depth, pos = 0, start + len("\\boxed")
    for i in range(pos, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[pos + 1 : i]
    return None


def extract_answer(text: str) -> str:
    """The last balanced ``\\boxed{}``, else the last ``<answer>``, else the whole text."""
    boxed = _last_boxed(text)
    if boxed is not None:
        return boxed.strip()
    tags = _ANSWER_TAG.findall(text)
    return tags[-1].strip() if tags else text.strip()


def normalise_answer(text: str) -> str:
    """Lowercase, drop punctuation and articles, collapse whitespace."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split())


def exact_match(pred: str, golds: list[str]) -> float:
    """1.0 when the normalised prediction equals any normalised gold answer."""
    return float(any(normalise_answer(pred) == normalise_answer(g) for g in golds))


def token_f1(pred: str, gold: str) -> float:
    """Token-level F1 of normalised texts (exact match when either side is empty)."""
    p, g = normalise_answer(pred).split(), normalise_answer(gold).split()
    if not p or not g:
        return float(p == g)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def _golds(ground_truth: dict[str, Any]) -> list[str]:
    raw = ground_truth.get("acceptable_answers") or ground_truth.get("answer") or ground_truth.get("answers") or []
    return [str(g) for g in (raw if isinstance(raw, list) else [raw])]


class AnswerParams(ParamsModel):
    """Params of ``answer``."""

    math: bool = False
    timeout_s: float = Field(5.0, gt=0, le=60)


@reward_component(name="answer", version="1", params=AnswerParams)
def answer_component(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    """Score = max of exact match, best token F1 and (``math=True``) math equivalence."""
    pred = extract_answer(final_text(traj))
    golds = _golds(ground_truth)
    metrics = {
        "exact_match": exact_match(pred, golds),
        "answer_f1": max((token_f1(pred, g) for g in golds), default=0.0),
    }
    if params.get("math"):
        timeout_s = float(params.get("timeout_s", 5.0))
        metrics["math_equal"] = float(any(math_equal(g, pred, timeout_s=timeout_s) for g in golds))
    return ComponentResult(score=max(metrics.values()), metrics=metrics, info={"prediction": pred})
