"""vLLM's prompt-logprobs shape, read by ``shared.clients.scoring`` (the one parser every client uses)."""

from __future__ import annotations

import pytest

from shared.clients.scoring import parse_prompt_logprobs, prompt_logprobs_body
from shared.errors import UpstreamError


def test_body_asks_for_prompt_logprobs_of_token_ids() -> None:
    assert prompt_logprobs_body("m", [5, 6]) == {"model": "m", "prompt": [5, 6], "max_tokens": 1,
                                                  "temperature": 0.0, "prompt_logprobs": 0}


def test_entries_are_read_by_the_prompt_token_and_checked() -> None:
    # vLLM may list the top token beside the prompt's own: the prompt's is the one read.
    answer = {"choices": [{"prompt_logprobs": [None, {"6": {"logprob": -0.5, "rank": 2}, "9": {"logprob": -0.1}},
                                               {"7": {"logprob": -2.0, "rank": 1}}]}]}
    assert parse_prompt_logprobs(answer, [5, 6, 7]) == [None, -0.5, -2.0]
    with pytest.raises(UpstreamError, match="2 tokens"):
        parse_prompt_logprobs(answer, [5, 6])
    with pytest.raises(UpstreamError, match="token 8"):
        parse_prompt_logprobs(answer, [5, 6, 8])
