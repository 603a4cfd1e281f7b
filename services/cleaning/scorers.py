"""Scorers for ScoreFilter: logprob-based (ChrMin, S-IFD) and model-judged (PassN, Paraphrase).

A round is one assistant answer with the messages before it. Logprob features come
from the endpoint's echoed prompt logprobs: the answer's tokens scored after the
context ("conditional") and alone ("unconditional"); delta_i = cond_i - uncond_i.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel, Field, ValidationError

from services.cleaning.llm import OpenAICompatClient, render_chatml
from services.cleaning.params import StepParams
from services.cleaning.text import message_text
from shared.errors import InvalidInput

__all__ = ["SCORERS", "ChrMinScorer", "PassNScorer", "ParaphraseScorer", "Round", "RoundFeatures", "SIFDScorer",
           "ScoreResult", "Scorer", "build_scorer", "chr_min", "fetch_features", "parse_verdict", "s_ifd"]

MIN_ANSWER_TOKENS = 6


class RoundFeatures(BaseModel):
    """Answer tokens with conditional and unconditional logprobs (None where missing)."""

    tokens: list[str]
    cond: list[float | None]
    uncond: list[float | None]

    def deltas(self) -> list[tuple[str, float]]:
        """(token, cond - uncond) where both logprobs exist."""
        return [(t, c - u) for t, c, u in zip(self.tokens, self.cond, self.uncond) if c is not None and u is not None]


class Round(BaseModel):
    """One scored round: where it is, its context and answer, and its features once fetched."""

    row_idx: int
    asst_idx: int
    intent: str | None = None
    context: list[dict[str, Any]]
    answer: str
    features: RoundFeatures | None = None


class ScoreResult(BaseModel):
    """A scorer's verdict on one round."""

    score: float | None
    passed: bool
    extras: dict[str, Any] = Field(default_factory=dict)


def chr_min(deltas: list[tuple[str, float]]) -> float | None:
    """Share of distinct tokens whose minimum delta is positive (None without tokens)."""
    mins: dict[str, float] = {}
    for tok, d in deltas:
        mins[tok] = min(d, mins.get(tok, d))
    return sum(1 for d in mins.values() if d > 0) / len(mins) if mins else None


def s_ifd(deltas: list[float], top_percent: float | None = None) -> float | None:
    """exp(-mean delta), over all deltas or the top k% by |delta|."""
    if not deltas:
        return None
    if top_percent is not None:
        k = max(1, round(len(deltas) * top_percent / 100))
        deltas = sorted(deltas, key=abs, reverse=True)[:k]
    return math.exp(-sum(deltas) / len(deltas))


def _fit_prompt(context: list[dict[str, Any]], max_chars: int) -> str:
    msgs = list(context)
    prompt = render_chatml(msgs)
    while len(prompt) > max_chars and len(msgs) > 1:
        drop = 1 if msgs[0].get("role") == "system" and len(msgs) > 2 else 0
        msgs.pop(drop)  # oldest non-system message first
        prompt = render_chatml(msgs)
    return prompt[-max_chars:]


def fetch_features(client: OpenAICompatClient, context: list[dict[str, Any]], answer: str,
                   *, max_prompt_chars: int = 4096) -> RoundFeatures | None:
    """Conditional and unconditional answer logprobs, or None if under 6 answer tokens."""
    prompt = _fit_prompt(context, max_prompt_chars)
    cond = [t for t in client.prompt_logprobs(prompt + answer) if t.offset >= len(prompt)]
    uncond = client.prompt_logprobs(answer)
    n = min(len(cond), len(uncond))
    if n < MIN_ANSWER_TOKENS:
        return None
    return RoundFeatures(tokens=[t.token for t in cond[:n]], cond=[t.logprob for t in cond[:n]],
                         uncond=[t.logprob for t in uncond[:n]])


class Scorer(ABC):
    """Base of scorers: validated params, ``needs_logprobs``, one result per round."""

    name: ClassVar[str] = ""
    needs_logprobs: ClassVar[bool] = False
    Params: ClassVar[type[StepParams]] = StepParams

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.name = cls.__dict__.get("name") or cls.__name__

    def __init__(self, **params: Any) -> None:
        try:
            self.params: Any = self.Params(**params)
        except ValidationError as exc:
            raise InvalidInput(f"Bad parameters for {self.name}: {exc.errors(include_url=False)[0]['msg']}.",
                               param=self.name) from None

    @abstractmethod
    def score(self, rounds: list[Round], client: OpenAICompatClient | None) -> list[ScoreResult]:
        """One result per round, in order."""


class ChrMinParams(StepParams):
    """ChrMinScorer parameters."""

    threshold: float = Field(0.47, description="Pass if the score is below (low = hard = keep).")


class ChrMinScorer(Scorer):
    """Share of distinct answer tokens the context helps; low scores (hard rounds) pass."""

    needs_logprobs = True
    Params = ChrMinParams

    def score(self, rounds: list[Round], client: OpenAICompatClient | None) -> list[ScoreResult]:
        """chr_min per round."""
        out = []
        for r in rounds:
            value = chr_min(r.features.deltas()) if r.features else None
            out.append(ScoreResult(score=value, passed=value is None or value < self.params.threshold,
                                   extras={"threshold": self.params.threshold}))
        return out


class SIFDParams(StepParams):
    """SIFDScorer parameters."""

    ifd_threshold: float | None = Field(None, description="Pass if IFD >= this; None = observe only.")


class SIFDScorer(Scorer):
    """Instruction-following difficulty as exp(-mean delta), plus top-50%/75% variants."""

    needs_logprobs = True
    Params = SIFDParams

    def score(self, rounds: list[Round], client: OpenAICompatClient | None) -> list[ScoreResult]:
        """IFD per round."""
        out = []
        for r in rounds:
            deltas = [d for _, d in r.features.deltas()] if r.features else []
            ifd = s_ifd(deltas)
            extras = {"n_tokens": len(deltas), "mean_delta": sum(deltas) / len(deltas) if deltas else None,
                      "ifd": ifd, "s_ifd_50": s_ifd(deltas, 50), "s_ifd_75": s_ifd(deltas, 75)}
            t = self.params.ifd_threshold
            out.append(ScoreResult(score=ifd, passed=t is None or ifd is None or ifd >= t, extras=extras))
        return out


_VERDICT_TAG = re.compile(r"<VERDICT>(PASS|FAIL)</VERDICT>")


def parse_verdict(text: str) -> bool:
    """PASS/FAIL from a judge reply; ambiguous or empty means fail."""
    squashed = re.sub(r"\s+", "", text or "").upper()
    tags = set(_VERDICT_TAG.findall(squashed))
    if len(tags) == 1:
        return tags == {"PASS"}
    tail = squashed[-200:]
    has_pass, has_fail = "PASS" in tail, "FAIL" in tail
    return has_pass and not has_fail


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return text[:head] + "\n…[truncated]…\n" + text[-(limit - head):]


_JUDGE_SYSTEM = (
    "You grade a model answer against a reference answer. Compare strictly: is it correct, does it take a "
    "similar approach (for open-ended questions: a similar style and stance), and is it complete? Give a "
    "justification of one to three sentences, then end with <verdict>PASS</verdict> or <verdict>FAIL</verdict>."
)


class PassNParams(StepParams):
    """PassNScorer parameters (reference defaults)."""

    n: int = Field(4, ge=1, description="Samples per round.")
    min_pass: int = Field(0, ge=0, description="Round passes with at least this many judged passes.")
    temperature: float = 0.7
    max_tokens: int = Field(4096, ge=1)
    judge_temperature: float = 0.0
    judge_max_tokens: int = Field(512, ge=1)
    judge_max_rollout_chars: int = Field(8000, ge=100)


class PassNScorer(Scorer):
    """Sample n answers, have a judge compare each with the reference; score = passes / samples."""

    Params = PassNParams

    def __init__(self, *, judge: OpenAICompatClient | None = None, **params: Any) -> None:
        super().__init__(**params)
        self.judge = judge

    def score(self, rounds: list[Round], client: OpenAICompatClient | None) -> list[ScoreResult]:
        """Pass rate per round (every round passes without a judge or sampler)."""
        return [self._one(r, client) for r in rounds]

    def _one(self, r: Round, client: OpenAICompatClient | None) -> ScoreResult:
        judge = self.judge or client
        if client is None or judge is None:
            return ScoreResult(score=None, passed=True, extras={"reason": "no sampler or judge"})
        p = self.params
        samples = client.chat(r.context, n=p.n, temperature=p.temperature, max_tokens=p.max_tokens)
        if not samples:
            return ScoreResult(score=None, passed=p.min_pass == 0, extras={"n_samples": 0})
        passes = sum(self._judge(judge, r, s.content, s.reasoning_content) for s in samples)
        # Divide by what was produced: a short batch must not look like failures.
        return ScoreResult(score=passes / len(samples), passed=passes >= p.min_pass,
                           extras={"n_samples": len(samples), "passes": passes})

    def _judge(self, judge: OpenAICompatClient, r: Round, content: str, reasoning: str) -> bool:
        answer = (f"<thinking>{reasoning}</thinking>\n" if reasoning else "") + content
        if not content.strip():
            return False
        lim = self.params.judge_max_rollout_chars
        question = "\n\n".join(f"[{m.get('role')}] {message_text(m.get('content'))}" for m in r.context)
        body = (f"## Question\n{_clip(question, lim)}\n\n## Reference answer\n{_clip(r.answer, lim)}\n\n"
                f"## Model answer\n{_clip(answer, lim)}")
        replies = judge.chat([{"role": "system", "content": _JUDGE_SYSTEM}, {"role": "user", "content": body}],
                             temperature=self.params.judge_temperature, max_tokens=self.params.judge_max_tokens,
                             extra_body={"chat_template_kwargs": {"enable_thinking": False}})
        return bool(replies) and parse_verdict(replies[0].content)


class ParaphraseParams(StepParams):
    """ParaphraseScorer parameters."""

    chr_min_threshold: float | None = Field(None, description="Pass if chr_min is below; None = observe.")
    prompt_budget_chars: int = Field(16384, ge=200, description="Context + reference budget in chars.")
    temperature: float = 0.7
    max_tokens: int = Field(4096, ge=1)
    max_prompt_chars: int = Field(4096, ge=100)


class ParaphraseScorer(Scorer):
    """Have the model rewrite the reference in its own words; chr_min of that paraphrase."""

    Params = ParaphraseParams

    def score(self, rounds: list[Round], client: OpenAICompatClient | None) -> list[ScoreResult]:
        """chr_min of one paraphrase per round."""
        return [self._one(r, client) for r in rounds]

    def _one(self, r: Round, client: OpenAICompatClient | None) -> ScoreResult:
        p = self.params
        room = p.prompt_budget_chars - len(render_chatml(r.context)) - 200
        if client is None or room < 200:
            return ScoreResult(score=None, passed=True, extras={"reason": "paraphrase skipped"})
        ask = ("Here is a reference answer:\n<reference>\n" + r.answer[:room] + "\n</reference>\n"
               "Answer the request completely in your own words. Do not copy the reference.")
        samples = client.chat(r.context + [{"role": "user", "content": ask}], temperature=p.temperature,
                              max_tokens=p.max_tokens)
        text = samples[0].content if samples else ""
        feats = fetch_features(client, r.context, text, max_prompt_chars=p.max_prompt_chars) if text.strip() else None
        if feats is None:
            return ScoreResult(score=None, passed=True, extras={"reason": "paraphrase skipped"})
        value = chr_min(feats.deltas())
        t = p.chr_min_threshold
        return ScoreResult(score=value, passed=t is None or value is None or value < t,
                           extras={"paraphrase_chars": len(text)})


SCORERS: dict[str, type[Scorer]] = {c.name: c for c in (ChrMinScorer, SIFDScorer, PassNScorer, ParaphraseScorer)}


def build_scorer(name: str, params: dict[str, Any] | None = None) -> Scorer:
    """A scorer from its name and params; InvalidInput on unknown names."""
    cls = SCORERS.get(name)
    if cls is None:
        raise InvalidInput(f"Unknown scorer {name!r}; known scorers: {', '.join(sorted(SCORERS))}.", param="scorers")
    return cls(**(params or {}))
