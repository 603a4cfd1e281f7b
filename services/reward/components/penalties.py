"""Format and length penalties, and a pluggable reasoning-quality hook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.reward.extract import read_model_turn
from services.reward.registry import ComponentResult, reward_component
from shared.schema import Trajectory, content_text

__all__ = ["ReasoningScorer", "set_reasoning_scorer"]

ReasoningScorer = Callable[[Trajectory], float]
_REASONING: list[ReasoningScorer] = []


def set_reasoning_scorer(scorer: ReasoningScorer | None) -> None:
    """Install (or clear with None) the function behind the ``reasoning_quality`` component."""
    _REASONING.clear()
    if scorer is not None:
        _REASONING.append(scorer)


@reward_component(name="format", version="1")
def format_component(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    """-1.0 when the final turn has malformed calls or no valid decision, else 0.0."""
    turn = read_model_turn(traj, family=params.get("family", "auto"))
    malformed = sum(1 for c in turn.calls if not c.well_formed)
    invalid = float(turn.decision == "invalid" and bool(params.get("require_decision", False)))
    bad = malformed > 0 or invalid > 0
    return ComponentResult(score=-1.0 if bad else 0.0,
                           metrics={"malformed_calls": float(malformed), "invalid_decision": invalid})


@reward_component(name="length", version="1")
def length_component(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    """Linear penalty in (-1, 0] for assistant text beyond ``max_chars``; -1 when truncated."""
    max_chars = int(params.get("max_chars", 4000))
    chars = sum(len(content_text(m.content)) for m in traj.messages if m.role == "assistant")
    over = max(0, chars - max_chars)
    score = -1.0 if traj.truncated else -min(1.0, over / max(1, max_chars))
    return ComponentResult(score=score, metrics={"assistant_chars": float(chars), "truncated": float(traj.truncated)})


@reward_component(name="reasoning_quality", version="1")
def reasoning_quality_component(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    """The installed reasoning scorer's value, or 0.0 when none is installed."""
    score = float(_REASONING[0](traj)) if _REASONING else 0.0
    return ComponentResult(score=score, metrics={"hook_installed": float(bool(_REASONING))})
