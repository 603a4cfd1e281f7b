"""Answer component: extraction, exact match, token F1, math equivalence in a worker process."""

from __future__ import annotations

import pytest

from services.reward.components.answer import extract_answer, normalise_answer, token_f1
from services.reward.mathcheck import math_equal, shutdown_pool
from services.reward.registry import get_component


def test_extraction_prefers_last_balanced_boxed() -> None:
    assert extract_answer(r"first \boxed{1} then \boxed{\frac{1}{2}} done") == r"\frac{1}{2}"
    assert extract_answer("<answer>a</answer> and <answer> Paris </answer>") == "Paris"
    assert extract_answer("just text") == "just text"


def test_normalisation_and_f1() -> None:
    assert normalise_answer("The  Eiffel Tower!") == "eiffel tower"
    assert token_f1("the eiffel tower in paris", "Eiffel Tower") == pytest.approx(2 * 0.5 * 1.0 / 1.5)
    assert token_f1("", "") == 1.0 and token_f1("x", "") == 0.0


def test_answer_component_ignores_reasoning(make_traj) -> None:
    comp = get_component("answer")
    traj = make_traj("<think>maybe \\boxed{Lyon}</think>The capital is <answer>Paris</answer>")
    result = comp(traj, {"acceptable_answers": ["paris", "Paris, France"]})
    assert result.score == 1.0 and result.metrics["exact_match"] == 1.0


def test_math_equivalence_runs_in_a_worker_process(make_traj) -> None:
    try:
        assert math_equal("1/2", "0.5")
        assert not math_equal("1/2", "0.6")
        result = get_component("answer")(make_traj(r"so \boxed{\frac{2}{4}}"), {"answer": "0.5"}, math=True)
        assert result.metrics["math_equal"] == 1.0 and result.metrics["exact_match"] == 0.0
    finally:
        shutdown_pool()
