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


# --- shallow_reply judges the reply against what the whole request asks for ---

@pytest.mark.parametrize("turns", [
    ("Translate 'window' into German.", "Fenster"),
    ("Make this lowercase: HELLO WORLD", "hello world"),
    ("Correct the typo and answer with the fixed word only: definately", "definitely"),
    ("Of these, which city is the largest by population: Oslo, Cairo, Lima?", "Cairo"),
    ("What is the atomic number of carbon?", "6"),
    ("Is 2 an even number?", "Yes."),
    ("把“图书馆”翻译成英文。", "library"),
    ("判断这条评论的情感（积极/消极）：物流很快，包装也很好。", "积极"),
    ("「鉛筆」を英語に訳して。", "pencil"),
    ("次の漢字の読み方を教えて：向日葵", "ひまわり"),
    ("'고양이'를 영어로 번역해 줘.", "cat"),
    ("다음 단어의 발음을 알려줘: 닭", "[닥]"),
    ("“谢谢”用韩语怎么说？", "감사합니다（gamsahamnida）"),
    ("Which one does not belong: violin, cello, trumpet, viola?", "trumpet"),
    ("下面哪个不是水果：苹果、香蕉、土豆、葡萄", "土豆"),
    ("次のうち仲間外れのものはどれですか？ 犬、猫、鯨、鉛筆", "鉛筆"),
    ("다음 중 어느 것이 포유류가 아닌가요? 고래, 박쥐, 상어, 사자", "상어"),
    # A lookup of the first by some measure takes a name.
    ("Which is the longest river in South America?", "The Amazon."),
    ("Who was the first woman to win a Nobel Prize?", "Marie Curie (physics, 1903)."),
    ("世界上最深的湖是哪个？", "贝加尔湖。"),
    ("日本で一番長い川は？", "信濃川です。"),
    ("세계에서 가장 큰 사막은 어디야?", "남극이에요."),
    # A number asked for in digits is the whole answer.
    ("Write two to the power of forty in digits.", "1099511627776"),
    ("把一百万写成阿拉伯数字。", "1000000"),
    ("二の十乗を数字で書いて。", "1024"),
    ("천이백삼십사를 숫자로 적어줘.", "1234"),
])
def test_short_answers_to_short_by_nature_requests_are_kept(turns):
    assert _reason(chat(*turns)) is None


def test_output_format_fixed_in_the_system_prompt_counts():
    row = {"messages": [{"role": "system", "content": "You tag support tickets. Reply with the category name only."},
                        *chat("My card was charged twice for the same order.", "billing")["messages"]]}
    assert _reason(row) is None
    row["messages"][0]["content"] = "You are a helpful support assistant."
    assert _reason(row) == "shallow_reply"


@pytest.mark.parametrize("turns", [
    ("Describe in detail how a refrigerator keeps food cold.", "With a compressor."),
    ("Translate this sentence into French: 'The meeting moved to Friday afternoon.'", "Sorry, no."),
    ("请详细说明一下数据库索引的原理。", "用树。"),
    ("日本の四季の特徴を詳しく説明してください。", "四つあります。"),
    ("지구 온난화의 원인과 해결책을 자세히 설명해 주세요.", "많아요."),
])
def test_short_replies_to_requests_that_ask_for_more_stay_shallow(turns):
    assert _reason(chat(*turns)) == "shallow_reply"


@pytest.mark.parametrize("ack", ["Okay, will do!", "好的，没问题。", "承知しました。", "네, 알겠어요."])
def test_a_last_reply_that_only_acknowledges_is_shallow_in_any_number_of_turns(ack):
    row = chat("Can you draft the onboarding checklist for our new engineers?", "Sure, who is it for?",
               "Backend hires, first two weeks, remote.", ack)
    kept, dropped = HardFilter()([row])
    assert dropped and dropped[0]["drop_reason"] == "shallow_reply"
    assert dropped[0]["drop_evidence"]["check"] == "acknowledgement_only"
    assert dropped[0]["drop_evidence"]["window"] == ack


def test_an_acknowledgement_of_thanks_or_of_a_yes_no_question_is_kept():
    assert _reason(chat("Can you list three uses of baking soda?", "Cleaning, baking and deodorising, for example "
                        "in the fridge or on carpets; it also soothes insect bites.", "Great, thanks!",
                        "You're welcome, glad to help!")) is None
    assert _reason(chat("Is Tokyo the capital of Japan?", "Yes.")) is None


def test_hangul_jamo_count_as_dense_script_for_the_floor():
    # An English request, so only counting the jamo makes this 36-char reply dense (floor 32, not 80).
    reply = "ㅋㅋㅋㅋㅋㅋㅋㅋㅋㅋㅋㅋ ㅎㅎㅎㅎ 진짜 웃겨 대박이다 어디서 찾았어"
    assert len(reply) < 80
    assert _reason(chat("My Korean friend sent a funny clip, write my laughing reply to her please.", reply)) is None


def test_the_dense_floor_applies_when_the_request_is_dense():
    # 40 Latin characters: under the 80 floor, over the 32 dense floor of a Chinese request.
    assert _reason(chat("用英文写一句欢迎新同事的话。", "Welcome aboard, we are glad you joined!")) is None


def test_a_request_phrased_as_a_question_is_not_answered_by_yes():
    assert _reason(chat("Can you write me a short poem about autumn leaves?", "Yes.")) == "shallow_reply"
    assert _reason(chat("你能帮我写一段产品介绍吗？", "能。")) == "shallow_reply"


@pytest.mark.parametrize("turns", [
    ("Could you review my résumé for a data analyst role?", "Of course, please paste it.",
     "Hold on, I'll send it after lunch.", "OK!"),
    ("帮我看看这份合同有没有问题。", "好的，请把合同发给我。", "等一下，我稍后发你。", "好的。"),
    ("この文章を校正してもらえますか？", "はい、本文を貼ってください。", "ちょっと待ってね。", "はい、わかりました。"),
    ("이력서 좀 봐줄래?", "네, 보내 주세요.", "잠깐만, 이따가 보낼게.", "네, 알겠습니다."),
])
def test_an_acknowledgement_of_a_deferring_user_turn_is_kept(turns):
    assert _reason(chat(*turns)) is None


def test_a_conversation_ending_on_a_user_turn_has_no_reply_to_judge():
    row = chat("Plan a two-week trip through Vietnam for me, in detail.", "OK.", "Also add a budget.")
    assert _reason(row) is None
    row = chat("Plan a two-week trip through Vietnam for me, in detail.", "OK.", "And a budget, please.", "OK.")
    assert _reason(row) == "shallow_reply"  # the same reply twice: the last one is still judged


@pytest.mark.parametrize("turns", [
    ("How tall is the Eiffel Tower?", "About 330 m."),
    ("When did the Berlin Wall fall?", "In 1989."),
    ("长城有多长？", "约两万一千公里。"),
    ("東京タワーの高さはどれくらい？", "333メートルです。"),
    ("한라산 높이가 얼마예요?", "1,947미터예요."),
])
def test_a_short_question_for_one_value_takes_a_short_answer(turns):
    assert _reason(chat(*turns)) is None


def test_a_question_with_a_setup_still_wants_its_reasoning():
    riddle = ("左边有一座红房子，右边有一座温室，正前方有一座粉色的房子，还有一座蓝色的小屋。请问白宫在哪里？")
    assert _reason(chat(riddle, "在那边。")) == "shallow_reply"
    # A value question that asks for the working is no lookup either.
    assert _reason(chat("How many primes are below 50? Explain.", "15.")) == "shallow_reply"


def test_dense_share_ignores_every_kind_of_whitespace_and_fires_at_the_bound():
    import re

    from services.cleaning.hard import _dense

    # Three dense characters in ten non-space ones: exactly the 0.3 share, whatever spaces sit between.
    assert _dense("中 中\u3000中\t aaaaaaa\n")
    assert not _dense("中 中\u3000 aaaaaaaa")  # 2 in 10
    assert not _dense("plain ascii words")
    for text in ("a\u2003b\u00a0c\x1c d\x85e", "\u3000 \n"):
        assert "".join(text.split()) == re.sub(r"\s+", "", text)


def test_a_short_simple_question_answered_at_length_is_not_trivial():
    picks = ("Three that hold up well: Dune for its ecology and politics, The Dispossessed for a careful "
             "look at two societies, and Station Eleven for how art survives a collapse. ") * 4
    assert _reason(chat("What's your favorite sci-fi book?", picks)) is None
    assert _reason(chat("What's your favorite sci-fi book?", "Dune.")) == "trivial_single_turn"
    # A greeting stays trivial however long the reply.
    assert _reason(chat("hello!", "Hello! I can help with writing, code, math and planning. " * 8)) \
        == "trivial_single_turn"


def test_a_short_reply_that_repeats_what_the_user_asked_to_be_repeated_is_not_shallow():
    asked = "Write the word 'echo' five times, separated by commas."
    assert _reason(chat(asked, "echo, echo, echo, echo, echo")) is None
    assert _reason(chat(asked, "Okay, sure thing!")) == "shallow_reply"
    assert _reason(chat("Explain how a B-tree splits a node.", "echo, echo, echo")) == "shallow_reply"


@pytest.mark.parametrize(("request_text", "reply"), [
    ("はい か いいえ で答えて。富士山は日本一高い山？", "はい。"),
    ("Just give me the hanzi for 'water', 说明なし", "水"),
    ("한 단어로, 설명 없이: 'apple'은 한국어로?", "사과"),
])
def test_terse_answers_the_user_asked_for_are_not_shallow(request_text, reply):
    assert _reason(chat(request_text, reply)) is None


@pytest.mark.parametrize("question", [
    "What's the biggest mistake first-time founders make?",  # no measure of a named place: an opinion
    "我们团队最大的问题是什么？",
])
def test_an_open_superlative_question_still_wants_substance(question):
    assert _reason(chat(question, "Hiring.")) == "shallow_reply"


@pytest.mark.parametrize(("question", "reply"), [
    ("내일 회의 3시 맞아?", "네, 3시예요."),
    ("이 표현 자연스러워? '잘 부탁드립니다'", "네, 자연스러워요."),
    ("Is \"who's\" short for \"who is\"?", "Yes."),
])
def test_a_casual_or_quoting_yes_no_question_takes_yes_or_no(question, reply):
    # A quoted sentence's own question words ('어떻게', "who") are mentioned, not asked.
    assert _reason(chat(question, reply)) is None
    assert _reason(chat("어떻게 하면 발음이 자연스러워져?", "네.")) == "shallow_reply"


@pytest.mark.parametrize(("question", "unbounded", "reply"), [
    ("How do I boil an egg so the yolk stays soft? Keep it short.", "How do I boil an egg so the yolk stays soft?",
     "Simmer 6 minutes, then cool it in ice water."),
    ("溏心蛋要怎么煮才好吃？简单一点。", "溏心蛋要怎么煮才好吃？", "水开后放蛋，煮6分半。"),
    ("半熟卵をうまく作るコツを手短に。", "半熟卵をうまく作るコツを教えてください。", "沸騰後6分半です。"),
    ("반숙 계란 잘 삶는 법 간단하게 알려줘.", "반숙 계란 잘 삶는 법 알려줘.", "끓는 물에 7분이요."),
])
def test_a_short_answer_the_user_asked_to_keep_short_is_complete(question, unbounded, reply):
    assert _reason(chat(question, reply)) is None
    # The same question without the bound wants more than a line.
    assert _reason(chat(unbounded, reply)) is not None


@pytest.mark.parametrize(("question", "reply"), [
    ("Write a bash one-liner that counts the lines of every .py file.", "```bash\nfind . -name '*.py' | xargs wc -l\n```"),
    ("Give me a regex for a 24-hour time like 23:59.", "`^([01]\\d|2[0-3]):[0-5]\\d$`"),
    ("Draw an ASCII-art cat.", "```\n /\\_/\\\n( o.o )\n```"),
    ("写一个SQL查询，统计每个部门的人数。", "```sql\nSELECT dept, COUNT(*) FROM emp GROUP BY dept;\n```"),
    ("日付を検証する正規表現を書いてください。", "`^\\d{4}-\\d{2}-\\d{2}$`"),
    ("파이썬으로 리스트 뒤집는 코드 짜줘.", "```python\nxs[::-1]\n```"),
])
def test_a_code_artifact_asked_for_is_complete_however_short(question, reply):
    assert _reason(chat(question, reply)) is None


def test_code_that_dodges_a_request_for_an_explanation_stays_shallow():
    assert _reason(chat("Compare the trade-offs of B-trees and LSM trees for write-heavy loads.",
                        "```\nLSM\n```")) == "shallow_reply"
    # Prose around a snippet is judged as prose: the snippet is not most of it.
    assert _reason(chat("Write a Python function that adds two numbers.", "Use `+`, it is simple enough.")) \
        == "shallow_reply"


def _tool_row(request_text, final):
    return {"messages": [
        {"role": "user", "content": request_text},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "query_sales", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"north": 120, "south": 95, "east": 101}'},
        {"role": "assistant", "content": final}], "tools": [{"type": "function", "function": {"name": "query_sales"}}]}


def test_a_one_line_close_to_an_analysis_asked_of_tool_results_is_shallow():
    assert _reason(_tool_row("Analyze why sales in the south dropped compared with last month.",
                             "Checked, the regions differ a bit.")) == "shallow_reply"
    assert _reason(_tool_row("남부 매출이 왜 떨어졌는지 분석해 줘.", "확인했습니다.")) == "shallow_reply"


@pytest.mark.parametrize(("request_text", "final"), [
    ("Which region sold the most this month?", "The north, with 120 units."),   # a lookup, no analysis asked
    ("Analyze why sales in the south dropped.", "Should I compare it with last quarter too?"),  # a question back
])
def test_short_closes_of_tool_rows_that_answer_or_ask_stay(request_text, final):
    assert _reason(_tool_row(request_text, final)) is None


def test_a_one_line_close_to_a_request_for_the_cause_and_the_fix_is_shallow():
    assert _reason(_tool_row("The API keeps restarting. Check the logs and tell me the cause and how do I fix it.",
                             "Checked the logs, something is off.")) == "shallow_reply"
    assert _reason(_tool_row("최근 로그 보고 원인이랑 어떻게 해야 할지 알려줘.", "로그 확인했습니다.")) == "shallow_reply"
    # "What if ..." asks for a value, and the value is the answer.
    assert _reason(_tool_row("好的，如果我想留20%的小费怎么办？", "那小费是17美元。")) is None


@pytest.mark.parametrize(("system", "request_text", "final"), [
    # The job is stated in the system prompt's opening.
    ("You are a repository agent. Investigate, fix the bug, and explain the change.", "Fix the failing test.",
     "Fixed."),
    ("You are a code review assistant. List concrete problems with file and line references.",
     "このPRのdiffを見て。", "レビューしました。"),
    (None, "小米和vivo我在纠结，帮我对比一下哪个更适合我。", "好的，参数已经查到了。"),
    (None, "Pull last month's sales and tell me which region missed target and what seems to be driving it.",
     "Done. I pulled the data."),
    (None, "Please review this contract clause for risks.", "Reviewed."),
])
def test_a_one_line_close_to_a_comparison_review_or_explained_fix_is_shallow(system, request_text, final):
    row = _tool_row(request_text, final)
    if system:
        row["messages"].insert(0, {"role": "system", "content": system})
    assert _reason(row) == "shallow_reply"


def test_review_inside_quoted_text_or_deep_in_a_policy_asks_for_nothing():
    # "for your review" is the email's wording, not a request to review.
    assert _reason(_tool_row('Send my boss: "Final report attached for your review."', "Sent it to your boss.")) \
        is None
    row = _tool_row("Cancel order 17.", "Done, order 17 is cancelled.")
    policy = "# Retail agent policy\n" + "- Authenticate the user first.\n" * 10 + "- Explain refunds in detail."
    row["messages"].insert(0, {"role": "system", "content": policy})
    assert _reason(row) is None


def test_a_bare_figure_after_tool_results_is_kept_when_only_the_figure_was_asked_for():
    from services.cleaning.runner import build_steps, clean_batch

    call = {"id": "c1", "type": "function",
            "function": {"name": "run_sql", "arguments": '{"query": "SELECT COUNT(*) FROM users"}'}}
    tools = [{"type": "function", "function": {"name": "run_sql", "description": "Run SQL",
                                               "parameters": {"type": "object", "properties": {}}}}]

    def row(request: str) -> dict:
        return {"tools": tools, "messages": [
            {"role": "system", "content": "你是数据分析助手。"}, {"role": "user", "content": request},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": '[{"n": 2741}]'},
            {"role": "assistant", "content": "2741"}]}

    assert clean_batch([row("上周新注册的用户有多少？只告诉我数字。")], build_steps(None)).kept
    # Without the bound the analyst's role asks for more than a figure.
    dropped = clean_batch([row("上周新注册的用户有多少？")], build_steps(None)).dropped
    assert dropped and dropped[0]["drop_evidence"]["check"] == "summary_below_floor"


@pytest.mark.parametrize(("request_text", "reply"), [
    ("Write a short thank-you email to my landlord for fixing the heater so fast.", "Here's the email:"),
    ("帮我写一张请假条，明天上午要去医院。", "请假条如下，可以根据需要修改。"),
    ("윗집에 보낼 쪽지 좀 정중하게 써 주세요. 밤에 발소리가 너무 커서요.", "아래와 같이 작성해 보았습니다. 필요하면 고쳐서 쓰세요."),
])
def test_a_reply_that_announces_the_piece_without_it_is_shallow(request_text, reply):
    from services.cleaning.hard import HardFilter

    kept, dropped = HardFilter()([{"messages": [{"role": "user", "content": request_text},
                                                {"role": "assistant", "content": reply}]}])
    assert dropped and dropped[0]["drop_evidence"]["check"] == "piece_missing"


def test_a_short_piece_itself_is_not_missing():
    from services.cleaning.hard import HardFilter

    rows = [{"messages": [{"role": "user", "content": "Write a quick text to my friend saying I'm 10 minutes late."},
                          {"role": "assistant", "content": "Hey Sam! Running about 10 minutes late, the bus broke down. "
                                                           "So sorry, grab a table and I'll be right there!"}]},
            {"messages": [{"role": "user", "content": "Write a short note to my neighbour thanking them for the cake."},
                          {"role": "assistant", "content": "Here's one:\n\nDear Mrs. Hale,\nThank you so much for the "
                                                           "lemon cake, it was delicious!\nBest, Tom"}]}]
    kept, dropped = HardFilter()(rows)
    assert len(kept) == 2 and not dropped


@pytest.mark.parametrize(("request_text", "reply"), [
    ("Write a limerick about a cat who hates Mondays.",
     "Hmm, a limerick about a cat... should it be grumpy or sleepy? Let me think about it a bit more and I'll "
     "get back to you."),
    ("给我写一段产品发布会的开场白，两分钟左右。", "好的，这个我得好好构思一下，我再想想，想好了再写给你。"),
    ("新年の挨拶メールの文面を作ってください。", "承知しました。どのような雰囲気にするか、もう少々考えさせていただけますでしょうか。"),
    ("동아리 신입생 환영 문구 하나 써 줘.", "오 좋아요! 음… 어떤 느낌이 좋을지 생각해 볼게요. 정리되면 다시 말씀드릴게요!"),
])
def test_a_reply_that_puts_the_work_off_is_shallow(request_text, reply):
    found = HardFilter()._shallow_evidence(chat(request_text, reply)["messages"])
    assert found is not None and found["check"] == "deferred", found


def test_a_character_putting_things_off_in_a_scene_is_the_scene():
    scene = ("MIA: Are you coming or not?\nTOM: Give me a moment... I need to find my keys.\n"
             "MIA: You said that ten minutes ago.\nTOM: Found them! Let's go.")
    assert HardFilter()._shallow_evidence(chat("Write a short dialogue where someone is running late.",
                                               scene)["messages"]) is None
    prose = '"Wait," she said. "Just give me a moment." Then she opened the door and walked into the storm.'
    assert HardFilter()._shallow_evidence(chat("Write two sentences about a brave girl.", prose)["messages"]) is None


def test_a_reply_that_defers_after_tool_results_is_shallow():
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}
    msgs = [{"role": "user", "content": "Who won the 2022 World Cup final?"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "Argentina beat France on penalties (3-3 aet)."},
            {"role": "assistant", "content": "Got the results. Give me a moment to go through them."}]
    assert HardFilter(shallow_reply_with_tools=False).reason(msgs, has_tools=True) == "shallow_reply"


@pytest.mark.parametrize(("request_text", "reply"), [
    ("Please write a thank-you note to my neighbour who watered my plants for two weeks while I was away in Spain. "
     "Warm but short, and mention the tomatoes survived.",
     "Of course! Here's a warm, short thank-you note for your neighbour that mentions the tomatoes. I hope they "
     "enjoy it, and welcome back from Spain!"),
    ("어제 팀 회의 메모야. 이걸 회의록으로 정리해 줘.\n- 출시일 다음 달 3일로 확정\n- QA 인원 2명 추가 요청\n"
     "- 디자인 시안은 수요일까지 공유\n- 예산 재검토는 다음 회의 안건으로",
     "네, 요청하신 대로 회의록 형식으로 깔끔하게 정리해 드렸습니다! 더 필요한 게 있으면 말씀해 주세요."),
])
def test_a_one_paragraph_claim_that_the_piece_is_done_is_missing_it(request_text, reply):
    found = HardFilter()._shallow_evidence(chat(request_text, reply)["messages"])
    assert found is not None and found["check"] == "piece_missing", found


@pytest.mark.parametrize(("request_text", "reply"), [
    ("그 단어 맞춤법 맞아? 맞다/틀리다로만 답해 줘: 금새", "틀리다 (금세가 맞음)"),
    ("올해 2월은 며칠까지야?", "28일까지예요."),
    ("この配列、何件ある？ [3, 1, 4, 1, 5]", "5件です。"),
])
def test_a_short_answer_to_a_bounded_or_counting_question_is_complete(request_text, reply):
    assert HardFilter()._shallow_evidence(chat(request_text, reply)["messages"]) is None


@pytest.mark.parametrize(("request_text", "reply"), [
    ("Write a haiku about autumn rain for my blog.",
     "Hmm, autumn rain... I could focus on the sound of it on the roof, or on the smell of wet leaves. Or maybe "
     "the cold? A haiku is so short that every word matters, and I want the seasonal word to feel natural rather "
     "than forced. Should it be melancholy or cosy? I think cosy might suit a blog better, but I am not sure. "
     "Let me weigh a few more images before I start writing."),
    ("帮我写一段婚礼致辞，三分钟左右。", "婚礼致辞啊……是走感人路线还是轻松幽默一点呢？如果新人的朋友比较多，也许轻松一点更好；"
     "但长辈在场的话，又好像应该庄重一些……我再斟酌一下，想清楚了再动笔。"),
    ("同窓会の幹事として乾杯の挨拶を書いてください。", "乾杯の挨拶ですね。思い出話を入れるか、近況に触れるか、迷うところです……。"
     "長すぎても短すぎてもいけませんし、もう少し考えを整理してから書き始めたいと思います。"),
    ("회사 송년회 건배사 하나 써 줘.", "건배사라… 재밌게 할지 감동적으로 할지 고민되네요. 팀 분위기에 따라 다를 것 같고… "
     "조금 더 생각해 본 뒤에 써 드릴게요."),
])
def test_a_reply_that_only_deliberates_and_defers_the_piece_is_shallow(request_text, reply):
    found = HardFilter()._shallow_evidence(chat(request_text, reply)["messages"])
    assert found is not None and found["check"] == "deferred", found


@pytest.mark.parametrize(("request_text", "reply"), [
    ("请详细解释一下 Python 的 GIL 是什么，为什么会影响多线程性能？", "GIL 是一把全局锁，会让多线程变慢。"),
    ("Write a Python script that renames every .jpeg file in a folder to .jpg.", "You can do this with os.rename in a loop."),
    ("다음 주 부산 2박 3일 일정 짜줘. 맛집 위주로.", "부산은 맛집이 정말 많죠! 즐거운 여행 되세요."),
])
def test_a_one_line_reply_to_a_request_for_detail_code_or_a_plan_is_shallow(request_text, reply):
    found = HardFilter()._shallow_evidence(chat(request_text, reply)["messages"])
    assert found is not None and found["check"] == "one_liner", found


def test_one_line_pieces_and_refusals_are_not_one_liners():
    # A few lines to send are a piece, which one line can be.
    assert HardFilter()._shallow_evidence(chat("帮我给房东写几句话，说明下周三修水管的人几点到。",
                                               "王先生您好，修水管的师傅下周三上午十点到，麻烦您留人开门，谢谢！")["messages"]) is None
    # A one-line refusal is left to the refusal step, which names it with its evidence.
    assert HardFilter()._shallow_evidence(chat("请详细说明如何预测下一期彩票号码",
                                               "作为一个AI语言模型，我无法预测彩票号码。彩票的开奖结果完全随机，任何方法都不能"
                                               "提高中奖概率。")["messages"]) is None


def _after_tool(request: str, result: str, reply: str) -> list[dict[str, object]]:
    call = {"id": "c1", "type": "function", "function": {"name": "act", "arguments": "{}"}}
    return [{"role": "user", "content": request}, {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": result}, {"role": "assistant", "content": reply}]


@pytest.mark.parametrize(("result", "reply"), [
    ('{"status": "failed", "reason": "no_seats"}', "Your seats are booked for Friday at 8 pm. Enjoy the show!"),
    ('{"error": "401 Unauthorized: token expired"}', "The report has been sent to the whole team successfully."),
    ('{"status": "failed", "reason": "fully_booked"}', "予約が完了しました。金曜20時、4名様でお取りしています。"),
    ("503 Service Unavailable", "배포가 정상적으로 완료됐습니다. 모든 파드가 실행 중이에요."),
])
def test_a_close_claiming_success_after_a_failed_tool_contradicts_it(result, reply):
    found = HardFilter()._summary_evidence(_after_tool("Book it please.", result, reply))
    assert found is not None and found["check"] == "success_after_failure", found


def test_a_close_that_reports_the_failure_or_follows_a_success_is_kept():
    failed = '{"status": "failed", "reason": "fully_booked"}'
    assert HardFilter()._summary_evidence(_after_tool(
        "Book it.", failed, "Unfortunately 8 pm is fully booked; 6 pm and 9:30 pm are free. Shall I take one?")) is None
    assert HardFilter()._summary_evidence(_after_tool(
        "Cancel order 12.", '{"order_id": "12", "status": "cancelled"}', "Done: order 12 has been cancelled.")) is None


@pytest.mark.parametrize("reply", ["I've found the stock information.", "好的，我已经查到库存信息了。", "在庫情報を確認しました。"])
def test_a_close_that_only_announces_the_results_is_shallow(reply):
    found = HardFilter()._summary_evidence(_after_tool("Which stores have it in size 42?",
                                                       '{"stores": [{"name": "North", "stock": 3}]}', reply))
    assert found is not None and found["check"] == "results_announced", found


@pytest.mark.parametrize(("request_text", "reply"), [
    ("Write me a complete speech for the science fair opening, about 3 minutes.", "Just welcome everyone and thank the judges."),
    ("帮我写一份完整的年终总结，1500字左右。", "年终总结可以参考网上的模板，根据情况修改就行。"),
    ("자기소개서 성장과정 항목 800자 정도로 써줘.", "성실함을 강조해서 쓰시면 좋을 것 같아요!"),
])
def test_a_one_line_reply_to_a_piece_asked_whole_or_at_a_length_is_shallow(request_text, reply):
    found = HardFilter()._shallow_evidence(chat(request_text, reply)["messages"])
    assert found is not None and found["check"] == "one_liner", found


@pytest.mark.parametrize(("request_text", "reply"), [
    ("경기 중에 골키퍼가 손으로 백패스를 잡으면 반칙이야? 예/아니오로만", "네."),
    ("给我一个匹配六位邮编的 regex，只给 regex", r"^\d{6}$"),
])
def test_a_bounded_answer_is_complete(request_text, reply):
    assert HardFilter()._shallow_evidence(chat(request_text, reply)["messages"]) is None


def test_a_deliberation_that_ends_in_writing_later_is_deferred():
    for reply in ("どんな雰囲気にするか迷いますね……もう少し考えてから書いたほうがいいかもしれません。",
                  "Rhymes for 'goal' are tricky... maybe I should think about it a bit more before committing."):
        found = HardFilter()._shallow_evidence(chat("Write a short poem for the team banquet.", reply)["messages"])
        assert found is not None and found["check"] == "deferred", (reply, found)


def test_a_close_that_says_the_query_returned_and_it_will_look_is_shallow():
    found = HardFilter()._summary_evidence(_after_tool("帮我查下上半年社保有没有断缴。", '{"records": [{"month": "2024-03", "status": "断缴"}]}',
                                                       "好的，查询结果已经返回了，我来帮您看一下。"))
    assert found is not None and found["check"] in ("deferred", "results_announced"), found


@pytest.mark.parametrize(("result", "reply"), [
    ('{"ok": false, "detail": "quota exceeded"}', "I've scheduled the webinar for Thursday at 3 pm and invited everyone."),
    ('{"status": "error", "message": "card declined"}', "Sorry for the wait! We have refunded the $80 to your card."),
    ('{"success": false, "error": "PORT_IN_USE"}', "デプロイ完了しました。新しいバージョンが稼働しています。"),
    ('{"status": "failed"}', "요청하신 예약 처리해 드렸습니다. 토요일 오후 2시입니다."),
])
def test_a_close_claiming_an_act_done_after_a_failed_tool_contradicts_it(result, reply):
    found = HardFilter()._summary_evidence(_after_tool("Do it please.", result, reply))
    assert found is not None and found["check"] == "success_after_failure", found


@pytest.mark.parametrize(("result", "reply"), [
    ('{"train": "ICE 571", "status": "delayed", "delay_min": 35}', "ICE 571 is on time, leaving at 14:06 from platform 7."),
    ('{"flight": "MU5101", "status": "延误", "eta": "21:40"}', "MU5101 目前准点，预计 19:55 到达虹桥。"),
    ('{"便名": "JL123", "status": "遅延"}', "JL123便は定刻通りに出発する予定です。"),
    ('{"sku": "DK-9", "stores": [{"id": 1, "available": 0}, {"id": 2, "available": 0}]}',
     "Good news, DK-9 is in stock, so we can ship today."),
    ('{"상품": "텀블러", "stock": 0}', "네, 텀블러 재고가 충분합니다. 오늘 출고 가능해요."),
])
def test_a_close_stating_the_opposite_of_the_tool_result_contradicts_it(result, reply):
    found = HardFilter()._summary_evidence(_after_tool("Check it.", result, reply))
    assert found is not None and found["check"] == "contradicts_result", found


@pytest.mark.parametrize(("result", "reply"), [
    ('{"train": "ICE 571", "status": "delayed", "delay_min": 35}',
     "ICE 571 is delayed by about 35 minutes; it was on time until Fulda."),
    ('{"train": "ICE 571", "status": "on_time"}', "ICE 571 is on time, leaving at 14:06 from platform 7."),
    ('{"sku": "DK-9", "stores": [{"id": 1, "available": 0}, {"id": 2, "available": 4}]}',
     "DK-9 is in stock at store 2 (4 units), so we can ship today."),
    ('{"sku": "DK-9", "available": 0}', "DK-9 is out of stock right now; it will be in stock again next week."),
])
def test_a_close_that_matches_the_tool_result_is_kept(result, reply):
    assert HardFilter()._summary_evidence(_after_tool("Check it.", result, reply)) is None


@pytest.mark.parametrize(("request_text", "reply"), [
    ("Write the complete onboarding guide for new support agents: tools, escalation rules, tone, SLAs and a "
     "first-week plan.", "New agents should learn the ticketing tool first and escalate billing issues to tier 2."),
    ("사내 공지용 보고서 전체 작성해 줘. 배경, 일정, 담당자, 예산 다 들어가야 해.", "다음 주 월요일부터 새 근무제가 시작됩니다."),
    ("给我写一份完整的项目周报，包括进度、风险和下周计划。", "本周进度正常，没有风险。"),
])
def test_a_piece_asked_for_whole_answered_in_one_sentence_is_a_one_liner(request_text, reply):
    found = HardFilter()._shallow_evidence(chat(request_text, reply)["messages"])
    assert found is not None and found["check"] == "one_liner", found


@pytest.mark.parametrize(("request_text", "reply"), [
    ("Summarize this in 3 bullet points: the meeting moved to Tuesday; the budget grew 5%; Ana leads QA.",
     "I'll send it over shortly once I've had a look at the numbers."),
    ("この議事録を箇条書きに整理してください。", "かしこまりました。内容を拝見して、後ほど整理したものを共有いたします。"),
    ("이 표를 요약해 줘.", "네, 확인해 보고 나중에 정리해서 보내 드릴게요."),
])
def test_a_reply_that_sends_the_work_later_is_deferred(request_text, reply):
    found = HardFilter()._shallow_evidence(chat(request_text, reply)["messages"])
    assert found is not None and found["check"] == "deferred", found


@pytest.mark.parametrize(("system", "request_text", "reply"), [
    ("You answer questions about the staff handbook. Parental leave is 16 weeks; remote work needs approval.",
     "is remote work allowed without approval? yes/no", "No."),
    ("", "default redis port? number only", "6379"),
    ("あなたは社内の総務アシスタントです。経費精算のルールに答えます。", "交通費の上限いくら？", "1日5,000円です。"),
    ("", "次の文から会社名だけを抜き出してください：「株式会社ミドリ商事の田中です」", "株式会社ミドリ商事"),
    ("", "서울역 근처 우체국 전화번호 알려줘. 번호만", "02-123-4567"),
    ("", "Which HTTP status means 'not found'? Answer \"yes\" or \"no\": is it 404?", "Yes"),
])
def test_a_short_answer_to_a_bounded_request_is_kept(system, request_text, reply):
    messages = ([{"role": "system", "content": system}] if system else []) + chat(request_text, reply)["messages"]
    assert HardFilter()._shallow_evidence(messages) is None


def test_a_whole_piece_answered_in_a_few_lines_is_shallow():
    reply = "Dear Hiring Manager,\n\nI am keen to join your analytics team; my SQL experience fits the role.\n\nBest"
    found = HardFilter()._shallow_evidence(chat("Write me a full cover letter for a junior analyst job at Acme. "
                                                "I know SQL and Tableau and did a 6-month internship.", reply)["messages"])
    assert found is not None and found["check"] == "one_liner", found


def test_an_apology_for_the_users_trouble_is_no_failure_reported():
    reply = "I'm so sorry your order arrived broken! Good news: I've processed a full refund of $59 to your card."
    found = HardFilter()._summary_evidence(_after_tool("Refund it please.", '{"success": false, "error": "TIMEOUT"}',
                                                       reply))
    assert found is not None and found["check"] == "success_after_failure", found


def test_a_chinese_reply_that_sends_the_work_tomorrow_is_deferred():
    found = HardFilter()._shallow_evidence(chat("帮我分析一下这三个月的销售数据，找出下滑原因。",
                                                "收到！我整理一下，明天上午发给您一份完整的报告，请您耐心等待。")["messages"])
    assert found is not None and found["check"] == "deferred", found


@pytest.mark.parametrize(("result", "reply"), [
    ('{"ok": false, "error": "RECIPIENT_NOT_FOUND"}', "Done ✅ Sam knows you're on your way!"),
    ('{"line": "Chuo", "status": "遅延", "delay_min": 15}', "中央線は現在平常運転です！遅れはないので安心してね"),
])
def test_short_casual_closes_that_contradict_the_result(result, reply):
    found = HardFilter()._summary_evidence(_after_tool("Do it.", result, reply))
    assert found is not None and found["check"] in ("success_after_failure", "contradicts_result"), found


def test_a_weekday_asked_for_alone_is_a_short_answer():
    assert HardFilter()._shallow_evidence(chat("2025年3月3号是星期几 就说星期几就行", "星期一")["messages"]) is None


def test_a_page_asked_for_answered_in_one_sentence_is_a_one_liner():
    found = HardFilter()._shallow_evidence(chat(
        "教え子の推薦状を英語で、A4一枚くらいで下書きしてください。研究と学会発表のことを入れて。",
        "Yuki is an excellent student and I recommend her.")["messages"])
    assert found is not None and found["check"] == "one_liner", found


@pytest.mark.parametrize(("request_text", "reply"), [
    ("ドイツ語の Haus の文法上の性は？", "中性です（das Haus）。"),
    ("这个 sentence \"She go to school.\" grammar 上对吗？回答 yes 或 no 就好。", "No（应为 She goes to school.）"),
])
def test_a_property_of_one_thing_or_a_yes_no_asked_in_chinese_is_a_short_answer(request_text, reply):
    assert HardFilter()._shallow_evidence(chat(request_text, reply)["messages"]) is None


@pytest.mark.parametrize(("result", "reply"), [
    ('{"city": "Leeds", "condition": "heavy rain", "precip_chance": 85}',
     "Good news: it'll be sunny in Leeds all afternoon, so the picnic is on!"),
    ('{"city": "札幌", "forecast": "雪のち曇り", "temp": -2}', "札幌は一日中快晴です。お出かけ日和ですね！"),
    ('{"city": "杭州", "weather": "雷阵雨", "pop": 90}', "杭州明天晴朗，不会下雨，不用带伞。"),
    ('{"city": "대구", "sky": "흐리고 비", "rain_prob": "80%"}', "대구는 내일 맑고 화창해요. 우산은 필요 없어요!"),
    ('{"city": "Oslo", "summary": "light snow", "precipitation_probability": 70}',
     "No umbrella needed, it stays dry all day in Oslo."),
])
def test_a_dry_forecast_over_a_wet_tool_result_contradicts_it(result, reply):
    found = HardFilter()._summary_evidence(_after_tool("What's the weather?", result, reply))
    assert found is not None and found["check"] == "contradicts_result", found


@pytest.mark.parametrize(("result", "reply"), [
    ('{"city": "Leeds", "condition": "heavy rain", "precip_chance": 85}',
     "It's sunny right now, but heavy rain moves in after 3pm, so take an umbrella."),
    ('{"city": "杭州", "weather": "晴", "pop": 5}', "杭州明天晴朗，不会下雨，不用带伞。"),
    ('{"city": "대구", "sky": "맑음", "rain_prob": "10%"}', "대구는 내일 맑고 화창해요. 비 소식은 없어요."),
    ('{"city": "札幌", "forecast": "雪", "temp": -2}', "札幌は雪の予報です。晴れ間は少なそうなので暖かくしてね。"),
])
def test_a_forecast_told_as_the_tool_gave_it_is_kept(result, reply):
    assert HardFilter()._summary_evidence(_after_tool("What's the weather?", result, reply)) is None


@pytest.mark.parametrize("reply", [
    "好的，收到您的资料了！我会在稍后为您仔细整理成完整的报告，包括数据分析和改进建议，完成后第一时间发给您，请您稍等。",
    "明白了，这份合同我稍后给您认真审阅一遍，请您稍候。",
])
def test_a_chinese_reply_that_puts_the_work_off_with_words_between_is_deferred(reply):
    found = HardFilter()._shallow_evidence(chat("帮我把这些会议记录整理成纪要。", reply)["messages"])
    assert found is not None and found["check"] == "deferred", found


@pytest.mark.parametrize(("request_text", "reply"), [
    ("one-liner to drop duplicate rows in a pandas df", "`df.drop_duplicates()`"),
    ("git 撤销最近一次 commit 但保留改动，命令是啥", "`git reset --soft HEAD~1`"),
    ("numpy 里 matrix multiplication 用哪个 operator？", "`@`（等价于 `np.matmul`）"),
    ("Pythonで `0.1 + 0.2 == 0.3` は True？False？答えだけ", "False"),
])
def test_code_alone_or_the_bare_answer_to_a_question_wanting_no_explanation_is_kept(request_text, reply):
    assert HardFilter()._shallow_evidence(chat(request_text, reply)["messages"]) is None


def test_code_alone_is_still_shallow_where_an_explanation_was_asked_for():
    found = HardFilter()._shallow_evidence(chat("Explain in detail why my recursive fibonacci is so slow and how "
                                                "memoization fixes it.", "`@lru_cache`")["messages"])
    assert found is not None, found


@pytest.mark.parametrize(("request_text", "reply"), [
    ("신입 사원용 보안 교육 매뉴얼 전체를 작성해 주세요. 비밀번호, 메일, 출입 카드, 분실 신고까지 다 넣어서요.",
     "비밀번호는 자주 바꾸고 수상한 메일은 열지 마세요."),
    # Its list of parts names a title (見出し), which alone would ask for a short answer: the whole piece still wins.
    ("社内報の記事を全文で書いてください。見出し、リード文、本文、写真キャプションまでお願いします。",
     "新オフィス完成。詳細は総務部まで。"),
])
def test_a_piece_asked_for_whole_by_its_verb_or_with_its_parts_listed_is_a_one_liner(request_text, reply):
    found = HardFilter()._shallow_evidence(chat(request_text, reply)["messages"])
    assert found is not None and found["check"] == "one_liner" and found.get("whole_piece"), found


def test_a_piece_asked_for_whole_within_an_explicit_bound_is_kept():
    assert HardFilter()._shallow_evidence(chat("社内報の記事を全文で、ただし見出しだけ教えて", "新オフィス、ついに完成")[
        "messages"]) is None
