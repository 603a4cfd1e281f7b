"""Optimal assignment: scipy and the fallback agree, and both beat greedy where greedy fails."""

from __future__ import annotations

import itertools

import numpy as np

from services.reward.matching import best_assignment


def _total(scores: list[list[float]], pairs: list[tuple[int, int]]) -> float:
    return sum(scores[r][c] for r, c in pairs)


def test_beats_greedy() -> None:
    scores = [[2.0, 1.9], [1.9, 0.0]]   # greedy takes (0,0) then (1,1) = 2.0; optimal 3.8
    assert _total(scores, best_assignment(scores)) == 3.8
    assert _total(scores, best_assignment(scores, use_scipy=False)) == 3.8


def test_fallback_matches_scipy_on_random_rectangles() -> None:
    rng = np.random.default_rng(1)
    for rows, cols in itertools.product(range(1, 5), range(1, 5)):
        scores = rng.random((rows, cols)).round(2).tolist()
        a, b = best_assignment(scores), best_assignment(scores, use_scipy=False)
        assert abs(_total(scores, a) - _total(scores, b)) < 1e-9
        assert len(a) == len(b) == min(rows, cols)


def test_empty() -> None:
    assert best_assignment([]) == []
