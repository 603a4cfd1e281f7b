"""Streamed chunks folded back into the non-streaming shape."""

from __future__ import annotations

from services.gateway.assemble import StreamAssembler

HEAD = {"id": "chatcmpl-7f3c", "object": "chat.completion.chunk", "created": 1767225600, "model": "policy"}


def chunk(delta: dict, finish: str | None = None, **extra: object) -> dict:
    return {**HEAD, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, **extra}]}


def test_parallel_tool_call_fragments_concatenate_per_index() -> None:
    asm = StreamAssembler(chat=True)
    for c in (
        {**chunk({"role": "assistant", "content": ""}, token_ids=[]), "prompt_token_ids": [1, 2, 3]},
        chunk({"tool_calls": [{"index": 0, "id": "call_a1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}, token_ids=[7]),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Pa'}}]}, token_ids=[8]),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ris"}'}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "call_b2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Tokyo"}'}}]}),
        chunk({}, "tool_calls", token_ids=[9]),
        {**HEAD, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}},
    ):
        asm.feed(c)
    out = asm.build()
    message = out["choices"][0]["message"]
    assert [(t["id"], t["function"]["arguments"]) for t in message["tool_calls"]] == [
        ("call_a1", '{"city": "Paris"}'), ("call_b2", '{"city": "Tokyo"}'),
    ]
    assert message["content"] is None and out["choices"][0]["finish_reason"] == "tool_calls"
    assert out["prompt_token_ids"] == [1, 2, 3] and out["choices"][0]["token_ids"] == [7, 8, 9]
    assert out["usage"]["total_tokens"] == 6 and out["id"] == "chatcmpl-7f3c"


def test_reasoning_content_and_logprobs_accumulate() -> None:
    asm = StreamAssembler(chat=True)
    asm.feed(chunk({"reasoning_content": "hm"}, logprobs={"content": [{"token": "a", "logprob": -1.0}]}))
    asm.feed(chunk({"content": "Hi"}, "stop", logprobs={"content": [{"token": "b", "logprob": -2.0}]}))
    choice = asm.build()["choices"][0]
    assert choice["message"]["reasoning"] == "hm" and choice["message"]["content"] == "Hi"
    assert [x["logprob"] for x in choice["logprobs"]["content"]] == [-1.0, -2.0]
    assert asm.build()["usage"] is None  # a cut stream never gets its usage chunk


def test_text_completion_chunks() -> None:
    asm = StreamAssembler(chat=False)
    asm.feed({"id": "c", "choices": [{"index": 0, "text": "ab", "token_ids": [1], "prompt_token_ids": [5], "logprobs": {"token_logprobs": [-0.1]}}]})
    asm.feed({"id": "c", "choices": [{"index": 0, "text": "c", "token_ids": [2], "finish_reason": "length", "logprobs": {"token_logprobs": [-0.2]}}], "choices_null": None})
    out = asm.build()
    assert out["object"] == "text_completion" and out["prompt_token_ids"] == [5]
    assert out["choices"][0] == {"index": 0, "finish_reason": "length", "text": "abc", "logprobs": {"token_logprobs": [-0.1, -0.2]}, "token_ids": [1, 2]}
    asm.feed({"id": "c", "choices": None})  # some backends send null choices
    assert asm.chunks == 3
