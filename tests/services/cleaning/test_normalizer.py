from services.cleaning.normalizer import MessageNormalizer, merge_same_role
from tests.services.cleaning.builders import chat


def _norm(row, **params):
    rows, dropped = MessageNormalizer(**params)([row])
    assert dropped == []
    return rows[0]["messages"]


def test_heartbeat_polling_round_is_stripped():
    row = chat("Read HEARTBEAT.md and follow it.", "HEARTBEAT_OK", "Summarise the report please.", "Sure: ...")
    assert [m["content"] for m in _norm(row)] == ["Summarise the report please.", "Sure: ..."]


def test_questions_about_heartbeats_and_keepalive_survive():
    for q in ("My heartbeat is irregular, what should I do?", "How do I configure TCP keepalive?"):
        msgs = _norm(chat(q, "Here is what to do ..."))
        assert [m["role"] for m in msgs] == ["user", "assistant"]


def test_developer_becomes_system_and_leading_assistant_removed():
    row = {"messages": [{"role": "assistant", "content": "stray"}, {"role": "developer", "content": "rules"},
                        {"role": "user", "content": "q"}]}
    assert [m["role"] for m in _norm(row)] == ["system", "user"]


def test_rewritten_tool_call_keeps_reasoning_content():
    row = chat("What's the weather?", '<tool_call>{"name": "weather", "arguments": {"city": "東京"}}</tool_call>',
               "<tool_response>sunny</tool_response>")
    row["messages"][1]["reasoning_content"] = "I should call the weather tool."
    msgs = _norm(row)
    asst = msgs[1]
    assert asst["reasoning_content"] == "I should call the weather tool."
    assert asst["tool_calls"][0]["function"] == {"name": "weather", "arguments": '{"city":"東京"}'}
    assert msgs[2] == {"role": "tool", "content": "sunny", "tool_call_id": asst["tool_calls"][0]["id"]}


def test_multi_call_results_are_split_one_tool_message_each():
    row = chat("q", '<tool_call>{"name": "f", "arguments": {}}</tool_call><tool_call>{"name": "g", "arguments": {}}'
               "</tool_call>", "<tool_response>1</tool_response><tool_response>2</tool_response>")
    msgs = _norm(row)
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool"]
    assert [m["content"] for m in msgs[2:]] == ["1", "2"]


def test_xml_looking_answer_is_not_a_tool_call():
    row = chat("Show me an XML config.", "<config><name>app</name></config>", "thanks")
    msgs = _norm(row)
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"] and "tool_calls" not in msgs[1]


def test_merge_pass_joins_same_role_and_keeps_reasoning_only_assistant():
    row = {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
                        {"role": "assistant", "content": "", "reasoning_content": "thinking"},
                        {"role": "tool", "content": " "}]}
    msgs = _norm(row)
    assert msgs[0]["content"] == "a\nb" and msgs[1]["reasoning_content"] == "thinking" and len(msgs) == 2


def test_passes_can_be_switched_off_and_other_keys_survive():
    row = chat("a", "b", id="x1", source="s")
    row["messages"].insert(1, {"role": "user", "content": "c"})
    out = MessageNormalizer(merge_same_role=False)([row])[0][0]
    assert len(out["messages"]) == 3 and out["id"] == "x1" and out["source"] == "s"


def test_a_blank_final_reply_is_kept_for_the_sanity_step_and_other_blank_turns_go():
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": " "}, {"role": "user", "content": "q2"},
            {"role": "assistant", "content": "\n"}]
    out = merge_same_role(msgs)
    assert [m["role"] for m in out] == ["user", "user", "assistant"]
    assert out[-1] == {"role": "assistant", "content": "\n"}
