"""Request checks before anything goes upstream."""

from __future__ import annotations

import pytest

from services.gateway.errors import ToolPairingError
from services.gateway.validation import check_tool_pairing, parse_body, validate_chat, validate_completion
from shared.errors import InvalidInput, InvalidJSON, PayloadTooLarge
from shared.schema import Message


def call(i: str) -> dict:
    return {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def msgs(*items: dict) -> list[Message]:
    return [Message.model_validate(m) for m in items]


def test_parse_body_refuses_bad_json_non_objects_and_oversize() -> None:
    assert parse_body(b'{"a": 1}', max_bytes=100) == {"a": 1}
    with pytest.raises(InvalidJSON):
        parse_body(b"{", max_bytes=100)
    with pytest.raises(InvalidJSON):
        parse_body(b"[1]", max_bytes=100)
    with pytest.raises(PayloadTooLarge):
        parse_body(b" " * 101, max_bytes=100)


def test_parallel_calls_answered_in_any_order_pass() -> None:
    check_tool_pairing(msgs(
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]},
        {"role": "tool", "tool_call_id": "b", "content": "2"},
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "assistant", "content": "done"},
    ))


def test_pairing_errors_name_the_offending_message() -> None:
    with pytest.raises(ToolPairingError) as info:
        check_tool_pairing(msgs({"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "zz", "content": "1"}))
    assert info.value.param == "messages[1].tool_call_id"
    with pytest.raises(ToolPairingError) as info:
        check_tool_pairing(msgs(
            {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "user", "content": "next"},
        ))
    assert info.value.param == "messages[2]" and "b" in info.value.message
    with pytest.raises(InvalidInput) as info:
        check_tool_pairing(msgs({"role": "assistant", "content": None, "tool_calls": [call("a")]}, {"role": "tool", "content": "1"}))
    assert info.value.param == "messages[1].tool_call_id"


def test_chat_and_completion_heads() -> None:
    head = validate_chat({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True, "top_k": 5})
    assert head.model == "m" and head.stream is True
    with pytest.raises(InvalidInput) as info:
        validate_chat({"model": "m", "messages": []})
    assert info.value.param == "messages"
    with pytest.raises(InvalidInput) as info:
        validate_chat({"messages": [{"role": "user", "content": "x"}]})
    assert info.value.param == "model"
    with pytest.raises(InvalidInput):
        validate_chat({"model": "m", "messages": [{"role": "wizard", "content": "x"}]})
    with pytest.raises(InvalidInput):
        validate_completion({"model": "m"})


def test_canonical_and_liberal_messages_get_the_same_verdicts() -> None:
    """The shortcut for canonical messages decides as validating every message with ``Message`` does."""
    from services.gateway.validation import _plain_turn, _turn_of

    canonical = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "q", "name": "u1"},
        {"role": "assistant", "content": None, "tool_calls": [call("a"), {**call("b"), "id": None}]},
        {"role": "tool", "tool_call_id": "a", "content": "1", "extra_field": {"kept": True}},
        {"role": "assistant", "content": "done", "reasoning_content": "r"},
    ]
    for item in canonical:
        assert _plain_turn(item) == _turn_of(Message.model_validate(item))
    liberal = [
        {"role": "assistant", "content": [{"type": "text", "text": "x"}]},
        {"role": "assistant", "content": None, "tool_calls": '[{"function": {"name": "f"}}]'},
        {"role": "assistant", "thinking": "t", "content": "x"},
        {"role": "assistant", "tool_calls": [{"name": "f", "arguments": {"x": 1}}]},
        {"role": "wizard", "content": "x"},
        {"role": "user", "content": 3},
    ]
    assert all(_plain_turn(item) is None for item in liberal)  # left to Message, as before
    validate_chat({"model": "m", "messages": liberal[:4] + [{"role": "user", "content": "next"}]})
    for bad in liberal[4:]:
        with pytest.raises(InvalidInput) as info:
            validate_chat({"model": "m", "messages": [{"role": "user", "content": "q"}, bad]})
        assert info.value.param == "messages[1]"
    with pytest.raises(ToolPairingError) as pairing:
        validate_chat({"model": "m", "messages": canonical[:3] + [{"role": "user", "content": "x"}]})
    assert pairing.value.param == "messages[3]" and "a" in pairing.value.message
