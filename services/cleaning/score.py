"""ScoreFilter: select rows by scoring their key rounds with logprob and judge scorers.

Rounds: ``user_data.key_rounds`` if present, else every assistant turn. A round is kept
iff all scorers pass; rows are kept, rewritten (key_rounds narrowed to passing rounds)
or dropped with ``score_no_context`` / ``score_all_rounds_failed`` / ``score_round_failed``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from services.cleaning.base import Row, StepOutput
from services.cleaning.llm import LLMEndpoint, OpenAICompatClient
from services.cleaning.params import ParamStep, StepParams
from services.cleaning.scorers import Round, Scorer, ScoreResult, build_scorer, fetch_features
from services.cleaning.text import message_text
from services.cleaning.user_data import get_user_data, set_user_data

__all__ = ["ScoreFilter", "ScoreFilterParams", "ScorerSpec"]


class ScorerSpec(BaseModel):
    """A scorer as configuration: ``{"name": "ChrMinScorer", "params": {...}}``."""

    model_config = ConfigDict(extra="forbid")

    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class ScoreFilterParams(StepParams):
    """Parameters of ScoreFilter."""

    endpoint: LLMEndpoint | None = Field(None, description="Model used for logprobs and sampling.")
    scorers: list[ScorerSpec] = Field(default_factory=list, description="Scorers; all must pass.")
    intents: list[str] | None = Field(None, description="Only score rounds with these intents.")
    keep_if_no_key_rounds: bool = False
    drop_row_on_any_fail: bool = True
    max_prompt_tokens: int = Field(1024, ge=16, description="Context budget (about 4 chars a token).")


def _intent(intents: Any, idx: int) -> str | None:
    if isinstance(intents, dict):
        value = intents.get(str(idx), intents.get(idx))
        return value if isinstance(value, str) else None
    return None


class ScoreFilter(ParamStep[ScoreFilterParams]):
    """Keep rows whose key rounds pass every scorer."""

    Params = ScoreFilterParams

    def __init__(self, *, client: OpenAICompatClient | None = None, **params: Any) -> None:
        raw = params.pop("scorers", None) or []
        objects = [s for s in raw if isinstance(s, Scorer)]
        params["scorers"] = [s for s in raw if not isinstance(s, Scorer)]
        super().__init__(**params)
        self.scorers: list[Scorer] = objects + [build_scorer(s.name, s.params) for s in self.params.scorers]
        p = self.params
        self.client = client or (OpenAICompatClient(p.endpoint) if p.endpoint else None)

    def process(self, rows: list[Row]) -> StepOutput:
        """Score every candidate round, then keep, rewrite or drop each row."""
        per_row = [self.candidate_rounds(i, row) for i, row in enumerate(rows)]
        flat = [r for rounds in per_row for r in rounds]
        results = self._score(flat)
        kept: list[Row] = []
        dropped: list[Row] = []
        it = iter(results)
        for row, rounds in zip(rows, per_row):
            verdicts = [all(res.passed for res in next(it)) for _ in rounds]
            outcome = self._decide(row, rounds, verdicts)
            if isinstance(outcome, str):
                dropped.append(self.drop(row, outcome, {"check": outcome, "rounds_scored": len(rounds),
                                                        "rounds_failed": verdicts.count(False)}))
            else:
                kept.append(outcome)
        return kept, dropped

    def candidate_rounds(self, row_idx: int, row: Row) -> list[Round]:
        """Rounds of one row worth scoring (assistant, non-blank, with context, intent-gated)."""
        raw = row.get("messages")
        msgs: list[Any] = raw if isinstance(raw, list) else []
        key_rounds = get_user_data(row, "key_rounds")
        intents = get_user_data(row, "intents")
        idxs = key_rounds if isinstance(key_rounds, list) and key_rounds else \
            [i for i, m in enumerate(msgs) if isinstance(m, dict) and m.get("role") == "assistant"]
        out = []
        for idx in idxs:
            if not isinstance(idx, int) or not 0 < idx < len(msgs) or msgs[idx].get("role") != "assistant":
                continue
            answer, intent = message_text(msgs[idx].get("content")), _intent(intents, idx)
            if not answer.strip() or (self.params.intents is not None and intent not in self.params.intents):
                continue
            out.append(Round(row_idx=row_idx, asst_idx=idx, intent=intent, context=msgs[:idx], answer=answer))
        return out

    def _score(self, rounds: list[Round]) -> list[list[ScoreResult]]:
        if self.client is not None and any(s.needs_logprobs for s in self.scorers):
            for r in rounds:
                r.features = fetch_features(self.client, r.context, r.answer,
                                            max_prompt_chars=self.params.max_prompt_tokens * 4)
        rounds_ok = [r for r in rounds if r.features is not None or not any(s.needs_logprobs for s in self.scorers)]
        by_scorer = [s.score(rounds_ok, self.client) for s in self.scorers]
        for s, res in zip(self.scorers, by_scorer):
            if len(res) != len(rounds_ok):
                raise RuntimeError(f"{s.name} returned {len(res)} results for {len(rounds_ok)} rounds")
        scored = {id(r): [res[i] for res in by_scorer] for i, r in enumerate(rounds_ok)}
        # Rounds too short to score (< 6 answer tokens) carry no verdict: an empty list.
        return [scored.get(id(r), []) for r in rounds]

    def _decide(self, row: Row, rounds: list[Round], verdicts: list[bool]) -> Row | str:
        p = self.params
        had_key_rounds = bool(get_user_data(row, "key_rounds"))
        scored = [(r, v) for r, v in zip(rounds, verdicts) if r.features is not None or
                  not any(s.needs_logprobs for s in self.scorers)]
        if not scored:
            if (had_key_rounds or p.intents is not None) and not p.keep_if_no_key_rounds:
                return "score_no_context"
            return row
        if had_key_rounds:
            passing = [r.asst_idx for r, v in scored if v]
            if not passing:
                return "score_all_rounds_failed"
            return {**row, "user_data": set_user_data(row, {"key_rounds": passing})}
        if p.drop_row_on_any_fail and not all(v for _, v in scored):
            return "score_round_failed"
        return row
