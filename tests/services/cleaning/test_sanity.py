from services.cleaning.sanity import MessageSanityFilter
from tests.services.cleaning.builders import chat

ANSWER = "Here is a complete and careful answer to your question with details."


def _check(msgs, **params):
    return MessageSanityFilter(**params).check(msgs)


def test_invalid_and_no_assistant():
    assert _check([]) == "invalid_messages"
    assert _check([{"role": "user", "content": "q"}]) == "no_assistant"


def test_system_messages_fold_and_tail_is_trimmed():
    msgs = [{"role": "system", "content": "A"}, {"role": "user", "content": "q"},
            {"role": "system", "content": "B"}, {"role": "assistant", "content": ANSWER},
            {"role": "user", "content": "dangling"}]
    out = _check(msgs)
    assert out[0] == {"role": "system", "content": "A\n\nB"} and out[-1]["role"] == "assistant"


def test_role_order_and_tool_matching():
    assert _check([{"role": "assistant", "content": "x"}, {"role": "user", "content": "q"},
                   {"role": "assistant", "content": ANSWER}]) == "role_order"
    msgs = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "content": "r", "tool_call_id": "zzz"}, {"role": "assistant", "content": ANSWER}]
    assert _check(msgs) == "tool_matching"


def test_content_integrity_bad_arguments_and_repeats():
    msgs = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{bad"}}]},
            {"role": "tool", "content": "r", "tool_call_id": "a"}, {"role": "assistant", "content": ANSWER}]
    assert _check(msgs) == "content_integrity"
    rep = chat("q", ANSWER, "q", ANSWER)["messages"]
    assert _check(rep) != "content_integrity"


def test_lang_match_flags_script_mismatch_but_not_json_answers():
    assert _check(chat("この文章を要約してください。長い文章です。", ANSWER * 2)["messages"]) == "lang_match"
    assert isinstance(_check(chat("以下のレビューを評価し、JSON形式で出力してください。", '```json\n[5, 1, 3]\n```' + " " * 60)
                             ["messages"]), list)


def test_agent_min_visible_counts_cjk_denser():
    # An agent row (it has a tool message) whose assistant shows only text.
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "ok"},
            {"role": "tool", "content": "r", "tool_call_id": "a"}]
    assert _check(msgs) == "agent_min_visible"
    msgs[1]["content"] = "네, 도와드릴 수 있습니다. 성함과 이메일 주소를 알려주세요."  # 33 chars, 24 hangul
    assert isinstance(_check(msgs), list)


def test_a_well_formed_tool_call_is_visible_output():
    # Function-calling samples: the call is the whole target, however short.
    call = {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
    assert isinstance(_check(msgs), list)
    msgs.append({"role": "tool", "content": "r", "tool_call_id": "a"})
    msgs.append({"role": "assistant", "content": "ok"})
    assert isinstance(_check(msgs), list)


def test_sensitive_words_whole_word_latin_substring_cjk(tmp_path):
    words = tmp_path / "words.txt"
    words.write_text("# list\nbomb\n炸弹\n", encoding="utf-8")
    f = MessageSanityFilter(sensitive_words_file=str(words))
    assert f.check(chat("How do I make a bomb?", ANSWER)["messages"]) == "sensitive_words"
    assert isinstance(f.check(chat("What is a bombastic style?", ANSWER)["messages"]), list)
    assert f.check(chat("怎么做炸弹", ANSWER)["messages"]) == "sensitive_words"


def test_filter_keeps_other_keys():
    kept, dropped = MessageSanityFilter()([chat("q", ANSWER, id="k1", extra={"a": 1})])
    assert kept[0]["id"] == "k1" and kept[0]["extra"] == {"a": 1} and not dropped


def test_translation_requests_may_be_answered_in_another_script():
    msgs = [{"role": "system", "content": "我希望你充当英语翻译，把我说的话翻译成英语。"}] + chat(
        "我今天很开心，因为天气很好。", "I am very happy today because the weather is nice. " * 2)["messages"]
    assert isinstance(_check(msgs), list)


def _tool_row(call_name, tools, args='{"q": "x"}'):
    return [{"role": "user", "content": "Look it up."},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": call_name, "arguments": args}}]}], tools


def test_a_call_to_a_tool_the_row_does_not_offer_is_a_tool_matching_failure():
    offered = [{"type": "function", "function": {"name": "search_flights", "parameters": {}}}]
    f = MessageSanityFilter()
    msgs, tools = _tool_row("book_hotel", offered)
    assert f.check(msgs, tools=tools) == "tool_matching"
    kept, dropped = f([{"messages": msgs, "tools": tools}])
    assert not kept and dropped[0]["drop_reason"] == "tool_matching"
    assert dropped[0]["drop_evidence"]["call"] == "book_hotel"
    assert dropped[0]["drop_evidence"]["offered"] == ["search_flights"]
    # The offered tool, in any of the shapes datasets use, is fine.
    for shape in (offered, [{"name": "search_flights"}], '[{"name": "search_flights", "parameters": {}}]'):
        msgs, tools = _tool_row("search_flights", shape)
        assert isinstance(f.check(msgs, tools=tools), list), shape


def test_rows_that_list_no_readable_tools_are_not_judged_by_the_list():
    f = MessageSanityFilter()
    for tools in (None, [], "", "not json", [{"description": "no name"}]):
        msgs, _ = _tool_row("anything_at_all", tools)
        assert isinstance(f.check(msgs, tools=tools), list), tools
    # Off by parameter, like the id check it belongs to.
    msgs, tools = _tool_row("book_hotel", [{"name": "search_flights"}])
    assert isinstance(MessageSanityFilter(check_tool_matching=False).check(msgs, tools=tools), list)


def test_lang_match_judges_the_reply_share_at_its_bounds():
    from services.cleaning.sanity import _lang_ok, _View

    def ok(user, reply):
        return _lang_ok(_View([{"role": "user", "content": user}, {"role": "assistant", "content": reply}]))

    ja = "この文章を要約してください。長い文章です。"
    # 50 Latin letters is the shortest reply judged; 49 is left alone before the request is read.
    assert not ok(ja, "a" * 50)
    assert ok(ja, "a" * 49)
    # A reply just under 2 % CJK still mismatches a Japanese request; at 2 % it counts as mixed.
    assert not ok(ja, "x" * 50 + "語")  # 1 / 51 < 0.02
    assert ok(ja, "x" * 49 + "語")  # 1 / 50 = 0.02


def test_lang_match_covers_scripts_beyond_latin_and_cjk():
    russian = "Музей открыт с десяти утра до шести вечера, кроме понедельника. Билеты продаются на входе."
    greek = "Το μουσείο είναι ανοιχτό από τις δέκα το πρωί μέχρι τις έξι το απόγευμα κάθε μέρα."
    assert _check(chat("박물관은 몇 시에 문을 여나요? 월요일에도 여나요?", russian)["messages"]) == "lang_match"
    assert _check(chat("When does the museum open, and is it open on Mondays?", greek)["messages"]) == "lang_match"
    assert _check(chat("Когда открывается музей и работает ли он по понедельникам?",
                       "The museum opens at ten and closes at six every day except Monday; tickets are sold "
                       "at the door.")["messages"]) == "lang_match"
    assert isinstance(_check(chat("Когда открывается музей?", russian)["messages"]), list)
    assert isinstance(_check(chat("Translate into Russian: the museum opens at ten.", russian)["messages"]), list)
    # Greek letters in a formula are no language.
    assert isinstance(_check(chat("What does the angle formula say?", "The angles satisfy α + β + γ = 180°, "
                                  "so with α = 50° and β = 60°, γ is 70° in every triangle.")["messages"]), list)


_ZH_REPLY = ("可以这样做：先把冰箱温度调到四度左右，再把剩菜分成小份装进密封盒。这样冷得快，也不容易串味。"
             "一般来说两三天内吃完比较安全，时间再长就建议冷冻保存了。")


def test_a_chinese_reply_to_a_korean_or_japanese_request_is_a_language_mismatch():
    assert _check(chat("남은 반찬 냉장고에 어떻게 보관하는 게 좋아요?", _ZH_REPLY)["messages"]) == "lang_match"
    assert _check(chat("残ったおかずはどうやって保存すればいいですか？", _ZH_REPLY)["messages"]) == "lang_match"
    # Asked for in that language, it is the answer.
    assert isinstance(_check(chat("남은 반찬 보관법을 중국어로 알려줘.", _ZH_REPLY)["messages"]), list)


def test_a_korean_reply_to_a_chinese_request_is_a_language_mismatch():
    ko = "남은 반찬은 작은 밀폐 용기에 나눠 담아 냉장 보관하세요. 이삼 일 안에 드시는 게 좋고, 더 오래 두려면 냉동하세요. " * 2
    assert _check(chat("剩菜放冰箱怎么保存比较好？", ko)["messages"]) == "lang_match"


def test_kanji_names_answering_a_japanese_request_and_a_table_of_languages_are_no_mismatch():
    names = "\n".join(f"{i}. {p}" for i, p in enumerate(
        ["金閣寺", "清水寺", "伏見稲荷大社", "嵐山竹林", "二条城", "銀閣寺", "平安神宮", "東福寺", "南禅寺", "三十三間堂",
         "錦市場", "祇園白川", "哲学之道", "北野天満宮", "龍安寺"], 1))
    assert isinstance(_check(chat("京都のおすすめ観光地を15個挙げて", names)["messages"]), list)
    table = ("| 语言 | 说法 |\n|---|---|\n| 日语 | ありがとうございます、どうもありがとう |\n"
             "| 韩语 | 감사합니다、고맙습니다 |\n| 中文 | 谢谢、多谢 |\n这几种说法在正式场合都可以用，对朋友可以说得随意一点。")
    assert isinstance(_check(chat("“谢谢”在几种亚洲语言里怎么说？", table)["messages"]), list)


def _after_tool(final):
    call = {"id": "c1", "type": "function", "function": {"name": "track", "arguments": '{"no": "4471"}'}}
    return {"messages": [{"role": "user", "content": "When does parcel 4471 arrive?"},
                         {"role": "assistant", "content": None, "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": "c1", "content": '{"eta": "14:00-16:00"}'},
                         {"role": "assistant", "content": final}],
            "tools": [{"type": "function", "function": {"name": "track", "parameters": {}}}]}


def test_a_row_ending_in_an_empty_reply_is_a_failed_generation_not_a_shorter_sample():
    from services.cleaning.pipeline import default_pipeline
    from services.cleaning.runner import clean_batch

    for final in ("", "  \n  ", None):
        result = clean_batch([_after_tool(final)], default_pipeline())
        [dropped] = result.dropped
        assert dropped["drop_reason"] == "content_integrity"
        assert dropped["drop_evidence"]["empty_final_reply"] == 3 and dropped["drop_evidence"]["after"] == "tool"
    # After a follow-up question too.
    follow_up = chat("Outline my talk.", "1. Problem\n2. Fix\n3. Results", "Add a line per slide?", "")
    assert clean_batch([follow_up], default_pipeline()).dropped[0]["drop_reason"] == "content_integrity"
    # The answered row is kept; the old behaviour (trim back to the call) is one parameter away.
    assert clean_batch([_after_tool("It arrives today between 14:00 and 16:00.")], default_pipeline()).kept
    assert MessageSanityFilter(drop_empty_final_reply=False).check(_after_tool("")["messages"])[-1]["tool_calls"]
