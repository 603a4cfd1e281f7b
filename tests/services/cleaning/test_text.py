from services.cleaning.text import cjk_ratio, has_payload, is_agent_row, message_text, normalize_tool_calls, split_think


def test_message_text_projects_strings_parts_and_dicts():
    parts = [{"type": "text", "text": "a"}, {"type": "image_url"}, {"type": "text", "text": "b"}]
    assert message_text("x") == "x"
    assert message_text(parts) == "a b"
    assert message_text(parts, sep="") == "ab"
    assert message_text({"type": "text", "text": "t"}) == "t"
    assert message_text(None) == "" and message_text(3) == ""


def test_cjk_ratio_ignores_only_spaces_newlines_tabs():
    assert abs(cjk_ratio("hello 世界") - 2 / 7) < 1e-9
    assert cjk_ratio("") == 0.0


def test_normalize_tool_calls_treats_empty_forms_as_none():
    for empty in (None, "", "[]", [], "not json", "{}"):
        assert normalize_tool_calls(empty) is None
    calls = normalize_tool_calls('[{"function": "{\\"name\\": \\"f\\"}"}]')
    assert calls == [{"function": {"name": "f"}}]
    assert normalize_tool_calls(["{bad", {}]) is None


def test_agent_row_detection():
    assert is_agent_row([{"role": "tool", "content": "x"}])
    assert is_agent_row([{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}])
    assert not is_agent_row([{"role": "assistant", "tool_calls": "[]"}, "junk"])


def test_has_payload_counts_reasoning():
    assert has_payload({"role": "assistant", "content": "", "reasoning_content": "why"})
    assert not has_payload({"role": "assistant", "content": "  "})


def test_split_think_keeps_pre_think_text_and_treats_unclosed_as_think():
    think, resp = split_think("before <think>a</think> after <THINKING>b</thinking> end")
    assert think == "a\nb" and "before" in resp and "after" in resp and "end" in resp
    think, resp = split_think("answer <think>truncated reasoning")
    assert think == "truncated reasoning" and resp == "answer"
