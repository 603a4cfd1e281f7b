"""Format and length penalties, and reasoning quality (a rubric, or an installed scorer)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field

from services.reward.components.skill import read_episode
from services.reward.extract import read_model_turn
from services.reward.registry import ComponentResult, ParamsModel, reward_component
from shared.schema import Trajectory, content_text
from shared.skills import reasoning_rubric

__all__ = ["FormatParams", "LengthParams", "ReasoningParams", "ReasoningScorer", "set_reasoning_scorer"]

ReasoningScorer = Callable[[Trajectory], float]
_REASONING: list[ReasoningScorer] = []


def set_reasoning_scorer(scorer: ReasoningScorer | None) -> None:
    """Install (or clear with None) the function behind the ``reasoning_quality`` component."""
    _REASONING.clear()
    if scorer is not None:
        _REASONING.append(scorer)


class FormatParams(ParamsModel):
    """Params of ``format``."""

    family: str = "auto"
    require_decision: bool = False


class LengthParams(ParamsModel):
    """Params of ``length``."""

    max_chars: int = Field(4000, ge=1)


class ReasoningParams(ParamsModel):
    """Params of ``reasoning_quality``."""

    max_words: int = Field(512, ge=1)
    family: str = "auto"


@reward_component(name="format", version="1", params=FormatParams)
def format_component(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    """-1.0 when the final turn has malformed calls or no valid decision, else 0.0."""
    turn = read_model_turn(traj, family=params.get("family", "auto"))
    malformed = sum(1 for c in turn.calls if not c.well_formed)
    invalid = float(turn.decision == "invalid" and bool(params.get("require_decision", False)))
    bad = malformed > 0 or invalid > 0
    return ComponentResult(score=-1.0 if bad else 0.0,
                           metrics={"malformed_calls": float(malformed), "invalid_decision": invalid})


@reward_component(name="length", version="1", params=LengthParams)
def length_component(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    """Linear penalty in (-1, 0] for assistant text beyond ``max_chars``; -1 when truncated."""
    max_chars = LengthParams.model_validate(params).max_chars
    chars = sum(len(content_text(m.content)) for m in traj.messages if m.role == "assistant")
    over = max(0, chars - max_chars)
    score = -1.0 if traj.truncated else -min(1.0, over / max(1, max_chars))
    return ComponentResult(score=score, metrics={"assistant_chars": float(chars), "truncated": float(traj.truncated)})


@reward_component(name="reasoning_quality", version="2", params=ReasoningParams)
def reasoning_quality_component(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    """The reasoning rubric of ``shared.skills.scoring`` (an installed scorer replaces it)."""
    p = ReasoningParams.model_validate(params)
    if _REASONING:
        return ComponentResult(score=float(_REASONING[0](traj)), metrics={"hook_installed": 1.0})
    ep = read_episode(traj, family=p.family)
    rubric = reasoning_rubric(ep.reasoning, answer=ep.answer, observations=ep.observations, max_words=p.max_words)
    metrics = {"hook_installed": 0.0, "reasoning_words": float(rubric.words),
               **{f"rubric/{k}": float(v) for k, v in rubric.criteria.items()}}
    return ComponentResult(score=rubric.score, metrics=metrics, info={"criteria": rubric.criteria})
