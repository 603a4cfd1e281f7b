"""Format and length penalties, and the reasoning-quality hook."""

from __future__ import annotations

from services.reward.components.penalties import set_reasoning_scorer
from services.reward.registry import get_component


def test_format_penalty_for_malformed_calls(make_traj) -> None:
    comp = get_component("format")
    assert comp(make_traj('<tool_call>{"name": "get_weather", "arguments": {"city": "x"}}</tool_call>'), {}).score == 0.0
    assert comp(make_traj('<tool_call>{"name": "get_weather"'), {}).score == -1.0
    assert comp(make_traj("hello"), {}, require_decision=True).score == -1.0


def test_length_penalty_linear_and_truncation(make_traj) -> None:
    comp = get_component("length")
    assert comp(make_traj("x" * 100), {}, max_chars=100).score == 0.0
    assert comp(make_traj("x" * 150), {}, max_chars=100).score == -0.5
    truncated = make_traj("x")
    truncated.truncated = True
    assert comp(truncated, {}).score == -1.0


def test_reasoning_quality_hook(make_traj) -> None:
    comp = get_component("reasoning_quality")
    assert comp(make_traj("x"), {}).score == 0.0
    set_reasoning_scorer(lambda traj: 0.25 * len(traj.messages))
    try:
        assert comp(make_traj("x"), {}).score == 0.5
    finally:
        set_reasoning_scorer(None)
