import pytest

from services.cleaning.hard import HardFilter
from tests.services.cleaning.builders import chat

LONG = "This is a detailed answer that explains the topic in depth with examples and caveats for the reader."


def _reason(row, **params):
    kept, dropped = HardFilter(**params)([row])
    return dropped[0]["drop_reason"] if dropped else None


def test_rules_in_reference_order():
    assert _reason({"messages": "x"}) == "invalid_messages"
    assert _reason({"messages": [{"role": "assistant", "content": LONG}]}) == "no_user"
    assert _reason(chat("hi", LONG)) == "trivial_single_turn"
    assert _reason(chat("Please compare merge sort and quicksort for me", "Merge sort is stable.")) == "shallow_reply"
    assert _reason(chat("Please compare merge sort and quicksort", "", "and heapsort?", " ")) == "all_empty_assistant"
    assert _reason(chat("Please compare merge sort and quicksort for me", LONG)) is None


def test_thinking_chain_rescues_trivial_and_shallow():
    row = chat("hi", "Hello!")
    row["messages"][1]["reasoning_content"] = "r" * 200
    assert _reason(row) is None


def test_size_limits():
    row = chat("Please compare merge sort and quicksort for me", LONG)
    assert _reason(row, max_chars_per_round=50) == "round_too_long"
    assert _reason(row, max_total_chars=120) == "total_too_long"


def test_max_rounds_counts_user_assistant_pairs_not_assistant_messages():
    row = chat("Please compare merge sort and quicksort for me", LONG)
    row["messages"].append({"role": "assistant", "content": LONG})
    assert _reason(row, max_rounds=1) is None
    row["messages"] += [{"role": "user", "content": "more please, in detail"}, {"role": "assistant", "content": LONG}]
    assert _reason(row, max_rounds=1) == "too_many_rounds"


def test_deny_keywords_match_whole_words_only():
    row = {"messages": [{"role": "system", "content": "Welcome to the Hackathon team."}] + chat(
        "Please compare merge sort and quicksort for me", LONG)["messages"]}
    assert _reason(row, system_deny_keywords=["hack"]) is None
    row["messages"][0]["content"] = "You may hack systems."
    assert _reason(row, system_deny_keywords=["hack"]) == "system_deny_keyword"


def test_short_tool_call_reply_is_not_shallow():
    row = chat("What's the weather in Paris today, please?", "")
    row["messages"][1]["tool_calls"] = [{"id": "1", "type": "function",
                                         "function": {"name": "weather", "arguments": "{}"}}]
    assert _reason(row) is None


def test_short_clarification_in_a_tool_dataset_is_not_shallow():
    row = chat("지금 바로 택시 좀 불러주세요.", "출발 위치와 도착 위치를 알려주세요.", tools=[{"type": "function"}])
    assert _reason(row) is None
    assert _reason(row, shallow_reply_with_tools=True) == "shallow_reply"


def test_short_cjk_answer_uses_the_cjk_floor():
    row = chat("以下のデータを基に、2021年に最も利益を上げた会社とそのCEOの名前を特定してください。",
               "2021年に最も利益を上げた企業は、会社Dです。同社のCEOは高橋社長です。")
    assert _reason(row) is None


@pytest.mark.parametrize("bad", [{"max_rounds": 0}, {"min_user_chars": "x"}, {"nope": 1}])
def test_bad_params_raise_invalid_input(bad):
    from shared.errors import InvalidInput
    with pytest.raises(InvalidInput):
        HardFilter(**bad)
