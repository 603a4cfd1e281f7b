import pytest

from services.cleaning.refuse import RefuseFilter, is_refusal
from tests.services.cleaning.builders import chat


@pytest.mark.parametrize("text", [
    "I'm sorry, but I can't help with that.", "I cannot help with that request.",
    "I\u2019m sorry, I can\u2019t assist with that.", "As an AI, I cannot provide medical advice.",
    "This request violates our usage rules.", "I must decline.", "抱歉，我无法回答这个问题。",
    "对不起，我不能提供这类内容。", "申し訳ございませんが、そのご質問にはお答えできません。",
    "죄송하지만 그 요청은 도와드릴 수 없습니다.",
])
def test_refusals_in_each_language(text):
    assert is_refusal(text)


def test_japanese_apologetic_refusal_missed_by_reference_is_caught():
    assert is_refusal("申し訳ありませんが、その依頼には対応いたしかねます。")
    assert is_refusal("申し訳ありませんが、お手伝いできません。")


def test_i_cant_wait_to_help_is_not_a_refusal():
    assert not is_refusal("I can't wait to help you with this!")


def test_helpful_answer_saying_cannot_about_a_library_is_not_a_refusal():
    assert not is_refusal("Unfortunately, the library cannot parse ISO dates, so use dateutil instead.")
    assert not is_refusal("I cannot find the bug in your snippet at first glance; check line 3.")


def test_conditional_and_pivot_are_not_refusals():
    assert not is_refusal("If I can't find the file, I will help you search.")
    assert not is_refusal("We cannot guarantee uptime, but here's how to help your users.")
    assert not is_refusal("I can't write to E:\\, let me use exec instead.")


def test_korean_apology_stating_a_fact_is_not_a_refusal():
    assert not is_refusal("죄송하지만 재고가 없습니다")


def test_check_window_zero_never_detects():
    assert not is_refusal("I cannot help with that.", check_window=0)


def test_think_blocks_are_removed_before_scanning():
    assert not is_refusal("<think>I cannot help with that? No, I can.</think>Here is the code.")


def test_later_assistant_turns_are_scanned():
    row = chat("Write a poem about spring, please.", "Here is a poem about blossoms and rain ...",
               "Now write malware for me.", "I'm sorry, but I can't help with that.", id="r1")
    kept, dropped = RefuseFilter()([row])
    assert dropped[0]["drop_reason"] == "refusal" and dropped[0]["id"] == "r1"
    kept, dropped = RefuseFilter(scan_all_assistants=False)([row])
    assert kept and not dropped


def test_agent_policy_denial_is_kept_but_chat_refusal_dropped():
    denial = "Unfortunately, I cannot process a refund for a basic economy ticket per the policy."
    agent = chat("Cancel my trip and refund me.", denial)
    agent["messages"].insert(1, {"role": "tool", "content": "{}", "tool_call_id": "x"})
    assert RefuseFilter()([agent])[0]
    assert RefuseFilter(agent_policy_exempt=False)([agent])[1]


def test_reasoning_is_scanned_only_when_asked():
    row = chat("Tell me a secret about the system, in full detail.", "Sure, here it is.")
    row["messages"][1]["reasoning_content"] = "I must decline this."
    assert RefuseFilter()([row])[0]
    assert RefuseFilter(scan_reasoning=True)([row])[1]


def test_japanese_apology_with_a_shikashi_pivot_is_kept():
    assert not is_refusal("申し訳ありませんが、私はその人物そのものにはなれません。しかし、その視点を想像してお答えします。")


@pytest.mark.parametrize("text", [
    "I'm sorry, but I can't help with that.", "This request violates our usage rules.", "I must decline.",
    "As an AI, I cannot provide medical advice.", "Unfortunately, I'm unable to share it, but here's how to find it.",
    "I can't wait to help you with this!", "This falls outside my scope.",
])
def test_ascii_fast_path_decides_like_the_full_alternation(text):
    # An ASCII window runs per-family regexes behind word gates; one non-ASCII character
    # sends the same sentence through the whole alternation instead.
    assert is_refusal(text) == is_refusal(text + " \u00e9")
