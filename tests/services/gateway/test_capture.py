"""Reading token facts out of vLLM-shaped responses, and stripping them for clients."""

from __future__ import annotations

from services.gateway.capture import extract_tokens, first_choice, strip_extensions


def chat_response() -> dict:
    return {
        "prompt_token_ids": [1, 2],
        "choices": [{
            "index": 0, "finish_reason": "tool_calls", "token_ids": [3, 4],
            "message": {"role": "assistant", "content": None, "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": "{}"}}]},
            "logprobs": {"content": [{"token": "token_id:3", "logprob": -0.1}, {"token": "token_id:4", "logprob": -0.2}]},
        }],
        "usage": {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4},
    }


def test_chat_shape() -> None:
    got = extract_tokens(chat_response())
    assert (got.prompt_token_ids, got.completion_token_ids, got.logprobs) == ([1, 2], [3, 4], [-0.1, -0.2])
    assert got.finish_reason == "tool_calls" and got.usage == {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}
    assert len(got.tool_calls) == 1


def test_completions_shape_and_missing_fields() -> None:
    got = extract_tokens({"choices": [{"text": "a", "prompt_token_ids": [9], "token_ids": [8], "logprobs": {"token_logprobs": [-1.5]}}]})
    assert (got.prompt_token_ids, got.completion_token_ids, got.logprobs) == ([9], [8], [-1.5])
    empty = extract_tokens({"choices": None})
    assert empty.prompt_token_ids is None and empty.completion_token_ids is None and empty.logprobs is None
    assert first_choice({"choices": []}) == {}


def test_strip_only_what_the_client_did_not_ask_for() -> None:
    stripped = strip_extensions(chat_response(), keep_token_ids=False, keep_logprobs=False)
    assert "prompt_token_ids" not in stripped and "token_ids" not in stripped["choices"][0]
    assert stripped["choices"][0]["logprobs"] is None
    kept = strip_extensions(chat_response(), keep_token_ids=True, keep_logprobs=True)
    assert kept == chat_response()
