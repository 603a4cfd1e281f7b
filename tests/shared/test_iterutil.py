"""batched() splits any iterable into lists of a fixed size."""

from __future__ import annotations

import pytest

from shared.iterutil import batched


def test_batches_of_a_fixed_size_with_a_short_tail() -> None:
    assert list(batched(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(batched(iter("ab"), 2)) == [["a", "b"]]
    assert list(batched([], 4)) == []


def test_size_must_be_positive() -> None:
    with pytest.raises(ValueError):
        list(batched([1], 0))
