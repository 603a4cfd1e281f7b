"""Token choice: greedy, top-k, top-p, seeded generators, raw logprobs."""

from __future__ import annotations

import math

import pytest
import torch

from services.inference.params import GenParams
from services.inference.sampling import pick_token

LOGITS = torch.tensor([2.0, 1.0, 0.5, -1.0, -3.0])
RAW = torch.log_softmax(LOGITS, dim=-1)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_greedy_takes_the_argmax_with_its_raw_logprob() -> None:
    token, logprob, top = pick_token(LOGITS, GenParams(temperature=0.0, top_logprobs=2), _gen(0))
    assert token == 0 and logprob == pytest.approx(float(RAW[0]))
    assert [t.token_id for t in top] == [0, 1]


@pytest.mark.parametrize("params", [GenParams(top_k=1), GenParams(top_p=0.1)])
def test_truncation_to_one_token_is_deterministic(params: GenParams) -> None:
    assert {pick_token(LOGITS, params, _gen(s))[0] for s in range(20)} == {0}


def test_top_k_two_never_leaves_the_two_best() -> None:
    picks = {pick_token(LOGITS, GenParams(top_k=2, temperature=5.0), _gen(s))[0] for s in range(60)}
    assert picks == {0, 1}


def test_logprob_is_raw_whatever_the_temperature() -> None:
    token, logprob, _ = pick_token(LOGITS, GenParams(temperature=3.0), _gen(5))
    assert logprob == pytest.approx(float(RAW[token])) and logprob <= 0 and not math.isnan(logprob)


def test_same_seed_same_choices_other_seed_differs() -> None:
    runs = [[pick_token(LOGITS, GenParams(temperature=2.0), g)[0] for _ in range(12)]
            for g in (_gen(9), _gen(9), _gen(10))]
    assert runs[0] == runs[1] and runs[0] != runs[2]
