"""Optimal one-to-one assignment of predicted calls to expected calls (maximum total score)."""

from __future__ import annotations

from itertools import permutations

__all__ = ["best_assignment"]

try:  # scipy's Hungarian solver when installed; the fallback below is exact for small sizes.
    from scipy.optimize import linear_sum_assignment as _lsa
except ImportError:  # pragma: no cover - depends on the environment
    _lsa = None

_BRUTE_FORCE_MAX = 7


def _brute_force(scores: list[list[float]]) -> list[tuple[int, int]]:
    rows, cols = len(scores), len(scores[0])
    if rows > cols:
        flipped = _brute_force([list(col) for col in zip(*scores)])
        return sorted((r, c) for c, r in flipped)
    best, best_pairs = -1.0, []
    for perm in permutations(range(cols), rows):
        total = sum(scores[r][c] for r, c in enumerate(perm))
        if total > best:
            best, best_pairs = total, list(enumerate(perm))
    return best_pairs


def _greedy(scores: list[list[float]]) -> list[tuple[int, int]]:
    cells = sorted(((s, r, c) for r, row in enumerate(scores) for c, s in enumerate(row)), reverse=True)
    used_r: set[int] = set()
    used_c: set[int] = set()
    pairs = []
    for _, r, c in cells:
        if r not in used_r and c not in used_c:
            used_r.add(r)
            used_c.add(c)
            pairs.append((r, c))
    return sorted(pairs)


def best_assignment(scores: list[list[float]], *, use_scipy: bool = True) -> list[tuple[int, int]]:
    """Pairs (row, col) maximising the summed score; each row and column used at most once."""
    if not scores or not scores[0]:
        return []
    if len(scores) == 1 or len(scores[0]) == 1:
        # One row or column: the best single cell is optimal, no solver needed.
        flat = [(s, r, c) for r, row in enumerate(scores) for c, s in enumerate(row)]
        _, r, c = max(flat, key=lambda t: (t[0], -t[1], -t[2]))
        return [(r, c)]
    if use_scipy and _lsa is not None:
        rows, cols = _lsa(scores, maximize=True)
        return [(int(r), int(c)) for r, c in zip(rows, cols)]
    if min(len(scores), len(scores[0])) <= _BRUTE_FORCE_MAX:
        return _brute_force(scores)
    return _greedy(scores)
