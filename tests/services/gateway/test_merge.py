"""Pure merge of trace records into token-exact segments, with mismatch causes."""

from __future__ import annotations

from typing import Any

from services.gateway.testing_upstream import END, encode, render
from shared.traces import TraceRecord, merge_session

CALL = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}


def record(seq: int, messages: list[dict[str, Any]], reply: dict[str, Any], sampled: str | list[int], **kw: Any) -> TraceRecord:
    """A chat trace as the gateway writes it, with ids from the byte-level template."""
    ids = encode(sampled) if isinstance(sampled, str) else sampled
    return TraceRecord(
        sequence=seq, endpoint="/v1/chat/completions", model="policy", request={"messages": messages},
        response={"choices": [{"message": reply, "finish_reason": "stop"}]},
        prompt_token_ids=encode(render(messages)), completion_token_ids=ids,
        logprobs=[-0.5] * len(ids), finish_reason="stop", **kw,
    )


def three_turns() -> list[TraceRecord]:
    m1 = [{"role": "user", "content": "weather in Paris?"}]
    a1 = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    calls_text = '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}</tool_call>'
    m2 = [*m1, a1, {"role": "tool", "tool_call_id": "c1", "content": "11C"}]
    a2 = {"role": "assistant", "content": "It is 11C."}
    m3 = [*m2, a2, {"role": "user", "content": "thanks"}]
    a3 = {"role": "assistant", "content": "bye"}
    return [record(0, m1, a1, calls_text + END), record(1, m2, a2, "It is 11C." + END), record(2, m3, a3, "bye" + END)]


def test_three_turn_tool_session_merges_into_one_exact_segment() -> None:
    records = three_turns()
    merged = merge_session("s", records)
    assert merged.mismatches == [] and merged.joins == 2 and len(merged.segments) == 1
    tokens = merged.segments[0].tokens
    assert tokens is not None
    assert tokens.prompt_ids == records[0].prompt_token_ids
    # prompt + response is exactly the last prompt followed by the last completion
    assert tokens.input_ids == (records[2].prompt_token_ids or []) + (records[2].completion_token_ids or [])
    sampled = sum(len(r.completion_token_ids or []) for r in records)
    assert sum(tokens.loss_mask) == sampled
    assert all((lp is None) == (m == 0) for lp, m in zip(tokens.logprobs, tokens.loss_mask))
    # the tool output sits in the response with mask 0
    tool_glue = encode("<|tool|>11C" + END + "<|assistant|>")
    start = len(records[0].completion_token_ids or [])
    assert tokens.response_ids[start : start + len(tool_glue)] == tool_glue
    assert set(tokens.loss_mask[start : start + len(tool_glue)]) == {0}
    assert merged.segments[0].messages[-1].content == "bye"


def test_reasoning_dropped_by_template_is_a_template_strip() -> None:
    m1 = [{"role": "user", "content": "q"}]
    reply = {"role": "assistant", "content": "A", "reasoning": "think hard"}
    first = record(0, m1, reply, "<think>think hard</think>A" + END)
    m2 = [*m1, {"role": "assistant", "content": "A"}, {"role": "user", "content": "more"}]
    second = record(1, m2, {"role": "assistant", "content": "B"}, "B" + END)
    merged = merge_session("s", [first, second])
    assert len(merged.segments) == 2
    (mismatch,) = merged.mismatches
    assert mismatch.cause == "template_strip" and mismatch.sequence == 1
    assert mismatch.position == len(first.prompt_token_ids or [])


def test_same_text_other_ids_is_a_retokenization() -> None:
    m1 = [{"role": "user", "content": "q"}]
    first = record(0, m1, {"role": "assistant", "content": "hi"}, [300, *encode(END)])  # 300 decodes to "hi"
    m2 = [*m1, {"role": "assistant", "content": "hi"}, {"role": "user", "content": "again"}]
    second = record(1, m2, {"role": "assistant", "content": "x"}, "x" + END)
    (mismatch,) = merge_session("s", [first, second]).mismatches
    assert mismatch.cause == "retokenization"


def test_edited_history_is_other() -> None:
    m1 = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "q"}]
    first = record(0, m1, {"role": "assistant", "content": "a"}, "a" + END)
    m2 = [{"role": "system", "content": "be long"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": "r"}]
    second = record(1, m2, {"role": "assistant", "content": "b"}, "b" + END)
    (mismatch,) = merge_session("s", [first, second]).mismatches
    assert mismatch.cause == "other" and mismatch.position < len(first.prompt_token_ids or [])


def test_changed_reply_sent_back_is_other() -> None:
    m1 = [{"role": "user", "content": "q"}]
    first = record(0, m1, {"role": "assistant", "content": "a"}, "a" + END)
    m2 = [*m1, {"role": "assistant", "content": "edited"}, {"role": "user", "content": "r"}]
    second = record(1, m2, {"role": "assistant", "content": "b"}, "b" + END)
    (mismatch,) = merge_session("s", [first, second]).mismatches
    assert mismatch.cause == "other"


def test_client_retry_keeps_last_answer_and_failed_calls_are_skipped() -> None:
    records = three_turns()
    retry = records[1].model_copy(update={"sequence": 5, "completion_token_ids": encode("It is 11C." + END), "logprobs": [-0.1] * 11})
    failed = records[2].model_copy(update={"sequence": 6, "status": "error", "completion_token_ids": None})
    merged = merge_session("s", [records[0], records[1], retry, failed])
    assert merged.calls == 4 and merged.captured_calls == 2
    assert merged.segments[0].metadata["sequences"] == [0, 5]


def test_logprobs_of_wrong_length_become_none() -> None:
    rec = three_turns()[0]
    rec.logprobs = [-1.0]
    tokens = merge_session("s", [rec]).segments[0].tokens
    assert tokens is not None and set(tokens.logprobs) == {None} and set(tokens.loss_mask) == {1}


def test_session_without_token_ids_has_no_segments() -> None:
    rec = three_turns()[0].model_copy(update={"prompt_token_ids": None})
    merged = merge_session("s", [rec])
    assert merged.segments == [] and merged.captured_calls == 0 and merged.calls == 1


def test_completions_retokenization_detected_from_text() -> None:
    def comp(seq: int, prompt: str, text: str, ids: list[int]) -> TraceRecord:
        return TraceRecord(sequence=seq, endpoint="/v1/completions", model="p", request={"prompt": prompt},
                           response={"choices": [{"text": text}]}, prompt_token_ids=encode(prompt), completion_token_ids=ids)

    first = comp(0, "say ", "hi", [300])
    second = comp(1, "say hi!", "x", encode("x"))
    (mismatch,) = merge_session("s", [first, second]).mismatches
    assert mismatch.cause == "retokenization"
