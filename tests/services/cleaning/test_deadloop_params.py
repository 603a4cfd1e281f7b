"""DeadLoopFilter's reference keyword arguments: each is accepted and each changes verdicts."""

from __future__ import annotations

import random

import pytest

from services.cleaning.deadloop import DeadLoopFilter, ngram_repetition
from shared.errors import InvalidInput

_WORDS = ("river", "stone", "cloud", "paper", "lamp", "garden", "window", "engine", "violin", "harbor", "candle",
          "forest", "mirror", "ticket", "pepper", "silver", "planet", "rocket", "meadow", "basket")


def _prose(n_words: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(_WORDS) for _ in range(n_words))


def _row(content: str) -> dict:
    return {"messages": [{"role": "user", "content": "Tell me about your day in some detail, please."},
                         {"role": "assistant", "content": content}]}


def _dropped(f: DeadLoopFilter, content: str) -> bool:
    return bool(f([_row(content)])[1])


def test_the_reference_keywords_are_accepted_as_shown():
    f = DeadLoopFilter(hesitation_density_threshold=7.0, cascade_threshold=5, cascade_window=800,
                       repetition_threshold=0.45, think_hesitation_density_threshold=15.0,
                       think_repetition_threshold=0.65)
    assert f.params == DeadLoopFilter().params
    with pytest.raises(InvalidInput):
        DeadLoopFilter(hesitation_threshold=3.0)


def test_hesitation_density_threshold():
    # 4 hesitations in about 400 characters: 10 per 1000.
    text = _prose(30, 1) + " hmm, " + _prose(10, 2) + " um, " + _prose(10, 3) + " uh, " + _prose(10, 4) + " hmm."
    density = 4 * 1000 / len(text)
    assert 7 < density < 20
    assert _dropped(DeadLoopFilter(), text)
    assert not _dropped(DeadLoopFilter(hesitation_density_threshold=20.0), text)
    assert _dropped(DeadLoopFilter(hesitation_density_threshold=density - 1), text)


def test_cascade_threshold():
    # Three correction markers close together in a long answer: too few for density.
    text = _prose(200, 5) + " actually " + _prose(15, 6) + " actually " + _prose(15, 7) + " actually " + _prose(200, 8)
    assert not _dropped(DeadLoopFilter(), text)
    assert _dropped(DeadLoopFilter(cascade_threshold=3), text)
    assert not _dropped(DeadLoopFilter(cascade_threshold=4), text)


def test_repetition_threshold():
    chunk = _prose(40, 9)
    text = chunk + " " + chunk + " " + _prose(40, 10)
    ratio = ngram_repetition(text)
    assert 0.2 < ratio < 0.45
    assert not _dropped(DeadLoopFilter(), text)
    assert _dropped(DeadLoopFilter(repetition_threshold=ratio - 0.05), text)


def test_think_hesitation_density_threshold():
    # About 10 hesitations per 1000 characters of thinking: under the think default (15), over 5.
    think = _prose(30, 11) + " hmm, " + _prose(10, 12) + " um, " + _prose(10, 13) + " uh, " + _prose(10, 14) + " hmm."
    content = f"<think>{think}</think>The answer is 42, as computed above."
    assert not _dropped(DeadLoopFilter(), content)
    assert _dropped(DeadLoopFilter(think_hesitation_density_threshold=5.0), content)
    # The response threshold does not reach into the thinking.
    assert not _dropped(DeadLoopFilter(hesitation_density_threshold=5.0), content)


def test_think_repetition_threshold():
    chunk = _prose(40, 15)
    think = " ".join([chunk] * 3) + " " + _prose(40, 16)
    ratio = ngram_repetition(think)
    assert 0.45 < ratio < 0.65
    content = f"<think>{think}</think>The answer is 42, as computed above."
    assert not _dropped(DeadLoopFilter(), content)
    assert _dropped(DeadLoopFilter(think_repetition_threshold=ratio - 0.05), content)
    assert not _dropped(DeadLoopFilter(repetition_threshold=ratio - 0.05), content)
