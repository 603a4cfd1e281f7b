import random

import pytest

from services.cleaning.deadloop import DeadLoopFilter, ngram_repetition, repeated_list_head, repetition_exceeds
from tests.services.cleaning.builders import chat


def _stuck(content, **extra):
    return DeadLoopFilter().is_stuck_message({"role": "assistant", "content": content, **extra})


def test_hesitation_burst_is_stuck():
    assert _stuck("Wait... no. Hmm, wait, actually I was wrong. Hmm. Let me rethink. Wait, no.")


def test_single_hmm_in_a_good_answer_is_not_stuck():
    assert not _stuck("Hmm, let me check that for you.")
    assert not _stuck("Hmm, good question. The answer is 42 because the input doubles twice.")


def test_chinese_dengdeng_meaning_etc_is_not_hesitation():
    assert not _stuck("我喜欢苹果、香蕉、橙子等等水果。等等这些水果都很健康。")
    assert _stuck("等等，我算错了。让我重新计算。不对，等等，让我再想想。嗯嗯，我又搞错了。")


def test_ordinary_korean_prose_is_not_hesitation():
    text = "다음 음식은 어떻게 만들어요? 영어로 설명해 주세요. 음식을 먹어요. 어머니가 어제 음악을 들었어요."
    assert not _stuck(text)
    assert _stuck("음... 어... 잠깐만, 다시 생각해 볼게요. 음, 헷갈리네. 어, 다시 해볼게요.")


def test_wo_bu_queding_is_honest_not_hesitation():
    assert not _stuck("我不确定具体日期，但是这个版本大约在2020年发布。我不确定是否支持旧系统。")


def test_restart_tutorial_does_not_cascade():
    # "重新" (again) in every step of a procedure is not a cascade of corrections.
    text = ("请重新启动服务器。然后重新加载配置文件。接着重新登录管理后台。再重新检查端口是否开放。"
            "最后重新运行测试脚本。如果仍然失败，请重新安装依赖。")
    assert not _stuck(text)
    # The same sentence six times over is no tutorial, though: it repeats itself.
    found = DeadLoopFilter().stuck_evidence({"role": "assistant", "content": "。".join(["请重新启动服务器"] * 6) + "。"})
    assert found is not None and found["check"] == "repeated_sentence" and found["count"] == 6


def test_cascade_of_five_actually_fires():
    assert _stuck(" ".join(["Actually, the value is different here."] * 5))


def test_repetition_signal_and_minimum():
    assert ngram_repetition("a b c d e f g h " * 3 + "a b c d e f") > 0.45
    assert ngram_repetition("a b c d e f g h " * 3 + "a b c d e") == 0.0


def _repeating_text(rnd: random.Random, cjk: bool) -> str:
    # A motif repeated with random insertions: ratios spread over the whole 0..1 range.
    pool = "日本語のテキストを繰り返し読む" if cjk else "the a dog ran far away x y"
    units = list(pool) if cjk else pool.split()
    motif = [rnd.choice(units[:rnd.randint(2, len(units))]) for _ in range(rnd.randint(1, 30))]
    out: list[str] = []
    while len(out) < rnd.randint(240, 900):
        out += motif if rnd.random() < 0.6 else [chr(0x4E00 + rnd.randint(0, 3000)) if cjk else f"w{rnd.randint(0, 99)}"]
    if cjk and rnd.random() < 0.2:
        out.append("\U0001F600")  # an astral character takes the set-based path
    return "".join(out) if cjk else " ".join(out)


def test_repetition_counts_equal_their_definition():
    rnd = random.Random(7)
    for _ in range(150):
        cjk, n = rnd.random() < 0.5, rnd.choice([2, 3, 5, 8, 9])
        text = _repeating_text(rnd, cjk)
        tokens = list(text.replace(" ", "").replace("\n", "")) if cjk else text.split()
        want = 1.0 - len({tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}) / (len(tokens) - n + 1)
        assert ngram_repetition(text, n=n) == want
        for threshold in (0.2, 0.45, 0.65, 0.9):
            assert repetition_exceeds(text, threshold, n=n) is (want > threshold)


def test_think_profile_is_laxer_and_pre_think_text_counts():
    think = "<think>" + "Wait, hmm. " * 2 + "x" * 300 + "</think>"
    assert not _stuck(think + " The answer is 4.")
    assert _stuck("Wait, no. Hmm. Wait, actually no. Hmm, wait. <think>fine</think> ok")


def test_reasoning_field_is_used_as_think():
    assert _stuck("The answer is 4.", reasoning_content="wait " * 10 + ("a b c d e f g h " * 10))


def test_agent_rows_are_checked_and_tool_loops_caught():
    call = {"id": "c", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    msgs = [{"role": "user", "content": "list files"}]
    for _ in range(4):
        msgs += [{"role": "assistant", "content": "", "tool_calls": [call]},
                 {"role": "tool", "content": "a.txt", "tool_call_id": "c"}]
    kept, dropped = DeadLoopFilter()([{"messages": msgs}])
    assert dropped and dropped[0]["drop_reason"] == "dead_loop"
    kept, dropped = DeadLoopFilter(max_repeated_tool_calls=5)([{"messages": msgs}])
    assert kept and not dropped


def _agent(user, steps, final=None):
    """A tool-use row: each step is (tool name, arguments JSON, result text)."""
    msgs = [{"role": "user", "content": user}]
    for i, (name, args, result) in enumerate(steps):
        call = {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": args}}
        msgs += [{"role": "assistant", "content": "", "tool_calls": [call]},
                 {"role": "tool", "content": result, "tool_call_id": f"c{i}"}]
    if final is not None:
        msgs.append({"role": "assistant", "content": final})
    return {"messages": msgs}


def _loop_evidence(row):
    kept, dropped = DeadLoopFilter()([row])
    return dropped[0]["drop_evidence"] if dropped else None


def test_polling_whose_answers_change_is_progress_not_a_loop():
    steps = [("check_deploy", '{"env": "prod"}', f'{{"state": "rolling", "updated": {n}}}') for n in (2, 5, 8, 10)]
    steps.append(("check_deploy", '{"env": "prod"}', '{"state": "complete", "updated": 10}'))
    assert _loop_evidence(_agent("Deploy and tell me when it finishes.", steps, "Deployment complete.")) is None
    # 等待翻译任务: the progress moves on each call.
    zh = [("查询任务", '{"任务": "t9"}', f"进度 {p}%") for p in (10, 40, 70, 100)]
    assert _loop_evidence(_agent("翻译完成后告诉我。", zh, "翻译已完成。")) is None


def test_the_same_call_answered_the_same_way_is_a_loop_in_any_spacing():
    steps = [("get_invoice", '{"id": 7, "year": 2024}', "ERROR 503 upstream unavailable"),
             ("get_invoice", '{"year":2024,"id":7}', "ERROR  503 upstream unavailable"),
             ("get_invoice", '{"id": 7, "year": 2024}', "ERROR 503 upstream unavailable"),
             ("get_invoice", '{ "id": 7, "year": 2024 }', "ERROR 503 upstream unavailable")]
    found = _loop_evidence(_agent("請求書7を取得して。", steps))
    assert found is not None and found["check"] == "tool_loop" and found["period"] == 1
    assert found["repeats"] == 4 and found["call"] == "get_invoice"


def test_a_cycle_of_two_calls_getting_the_same_answers_is_a_loop():
    cycle = [("find_order", '{"q": "A-19"}', "no match"), ("open_order", '{"id": "A-19"}', "404 not found")]
    found = _loop_evidence(_agent("주문 A-19를 취소해 줘.", cycle * 4, "주문을 찾지 못했습니다."))
    assert found is not None and found["period"] == 2 and found["repeats"] == 4
    # Three rounds of the cycle stay under the limit of four.
    assert _loop_evidence(_agent("주문 A-19를 취소해 줘.", cycle * 3, "주문을 찾지 못했습니다.")) is None
    # Alternating calls whose answers move on are a walk through pages, not a loop.
    pages = [s for n in range(4) for s in (("list_page", f'{{"page": {n}}}', f"rows {n * 10}-{n * 10 + 9}"),
                                           ("read_row", f'{{"row": {n * 10}}}', f"row {n * 10}: ok"))]
    assert _loop_evidence(_agent("Scan the table.", pages, "Done.")) is None


def _row_dropped(user, reply):
    kept, dropped = DeadLoopFilter()([{"messages": [{"role": "user", "content": user},
                                                    {"role": "assistant", "content": reply}]}])
    return bool(dropped)


def test_a_script_reply_is_fiction_even_when_the_request_names_no_genre():
    # No "story" or "dialogue" in the request: the reply's own form (speakers taking turns) says it.
    ko = ("면접 연습 좀 도와줘. 면접관이랑 나.\n면접관: 자기소개 부탁드립니다.\n지원자: 어... 음... 저는, 그러니까...\n"
          "면접관: 천천히 하세요.\n지원자: 네, 음... 잠깐만요... 어... 저는 김민수입니다.\n면접관: 좋습니다.")
    assert not _row_dropped("면접 연습 좀 도와줘.", ko)
    en = ("COACH: Ready?\nRILEY: Um. I think so? Wait, hmm.\nCOACH: Breathe.\nRILEY: Uh, okay, um, wait, "
          "which foot first?\nCOACH: Left.\nRILEY: Hmm. Right. I mean left. Wait.")
    assert not _row_dropped("Help me rehearse the first lesson with a nervous student.", en)


def test_a_requested_voice_hesitates_without_being_stuck():
    ja = "えっと……あの、その……ちょ、ちょっと待って。えーと、つまり、あの……ごめん、もう一回言うね。えっと……"
    assert not _row_dropped("初デートで緊張している男の子を演じて、ひとこと言ってみて。", ja)
    zh = "嗯……那个……我、我其实……等一下，呃，我想说的是……嗯……算了，呃，等等……"
    assert not _row_dropped("用一个害羞学生的口吻，跟老师请假。", zh)


def test_filler_words_named_in_a_list_are_not_used():
    reply = ("To sound calmer, cut the fillers (um, uh, hmm, well) and pause instead. When you notice one, "
             "stop, breathe, and restart the sentence. Practise with a timer for two minutes a day.")
    assert not _row_dropped("How do I stop saying um in meetings?", reply)


def test_the_assistant_stuck_in_its_own_voice_is_still_dropped():
    stuck = ("Hmm, the total is 42. Wait, no. Hmm, let me redo it. Um, 40 plus 3... wait, that is 43. "
             "Hmm, actually no. Wait. Let me start over. Hmm, 42? Wait, no...")
    assert _row_dropped("What is 17 + 25?", stuck)
    # A key-value list is not a script, so hesitations around it still count.
    listed = ("Name: Ana\nAge: 31\nCity: Lima\nHmm, wait, no. Hmm, wait. Um, actually, wait, hmm, let me check "
              "again. Wait, hmm, no.")
    assert _row_dropped("Fill in Ana's profile.", listed)
    # Requested fiction that loops is still a loop: repetition counts in any voice.
    loop = " ".join(["The knight rode on and on through the dark forest until the night came again."] * 12)
    assert _row_dropped("Write a short story about a knight.", loop)


def test_short_replies_that_only_repeat_one_sentence_are_loops_in_every_script():
    # Too few words for the n-gram ratio, in CJK above all; counted in sentences instead.
    for text in ("お待ちください。" * 5, "잠시만 기다려 주세요. " * 5, "我正在查询。" * 7, "Checking now. " * 5):
        found = DeadLoopFilter().stuck_evidence({"role": "assistant", "content": text})
        assert found is not None and found["check"] == "repeated_sentence", text
    # A block of lines repeated is the same loop.
    block = "Summary:\nRevenue grew.\nCosts fell.\nMargins improved.\n\n"
    assert _stuck(block * 4)
    # Numbered steps that say the same thing are the same sentence.
    steps = "\n".join(f"Step {n}: Restart the router and wait." for n in range(1, 7))
    assert _stuck(steps)


def test_tables_answer_keys_and_requested_repetition_are_not_loops():
    # Rows that differ by their numbers are data.
    rows = "\n".join(f"- Flight KL{600 + n}: departs {8 + n}:15, arrives {11 + n}:40" for n in range(6))
    assert not _stuck(rows)
    agenda = "\n".join(f"{h}:30 stand-up meeting" for h in range(9, 15))
    assert not _stuck(agenda)
    # Numbered answers from a closed set ("Q3: yes") are answers, not sentences.
    key = "\n".join(f"Q{n}: {'yes' if n % 3 else 'no'}" for n in range(1, 16))
    assert not _stuck(key)
    ja_key = "\n".join(f"問{n}：いいえ" for n in range(1, 11))
    assert not _stuck(ja_key)
    # The user asked for the line again and again.
    lines = "\n".join(["I will finish my homework before I play."] * 10)
    assert not _row_dropped("Write this sentence 10 times: I will finish my homework before I play.", lines)
    assert not _row_dropped("把这句话抄写五遍：今天也要努力。", "今天也要努力。" * 5)
    assert _row_dropped("Give me a motivational quote.", lines)


def test_an_answer_key_of_few_values_is_not_one_item_on_repeat():
    key = "Answers:\n" + "\n".join(f"{n}. {'False' if n % 4 == 0 else 'True'}" for n in range(1, 25))
    assert not _stuck(key)
    zh = "答案：" + "，".join("对" if n % 3 else "错" for n in range(1, 22))  # 对/错 are single characters
    assert not _stuck(zh)
    ko = "\n".join(f"{n}번: {'예' if n % 3 else '아니요'}" for n in range(1, 16))
    assert not _stuck(ko)
    # One item filling the list, with a stray other value or two, is still a loop.
    from services.cleaning.deadloop import repeated_item

    found = repeated_item("\n".join(["- Banana"] * 18 + ["- Apple"]))
    assert found is not None and found["item"] == "banana" and found["count"] == 18
    # So is a longer line repeated with a second line beside it.
    lines = "\n".join(["I love this song so much"] * 15 + ["It is great"] * 5)
    assert _stuck(lines)


def test_tool_loop_screen_lets_exactly_the_limit_of_call_turns_through():
    # The screen skips rows with fewer call turns than the limit; at the limit the loop still fires.
    step = ("get_status", '{"id": 3}', "pending")
    assert _loop_evidence(_agent("Check order 3.", [step] * 4))["repeats"] == 4
    assert _loop_evidence(_agent("Check order 3.", [step] * 3)) is None
    # Turns with an empty tool_calls value are no steps, so they neither count nor break the loop.
    row = _agent("Check order 3.", [step] * 4)
    row["messages"].insert(3, {"role": "assistant", "content": "Still pending.", "tool_calls": []})
    assert _loop_evidence(row)["repeats"] == 4


def test_sentence_split_lookahead_changes_no_split():
    import re

    from services.cleaning.deadloop import _UNIT_SPLIT_RE

    plain = re.compile(r"(?<=[.!?])\s+|[。！？\n]+")  # the pattern without its lookahead
    rng = random.Random(7)
    alphabet = ["a", "b", " ", "\n", "\t", "\u3000", ".", "!", "?", "。", "！", "？", "x."]
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert _UNIT_SPLIT_RE.split(text) == plain.split(text), text


def test_marker_bounds_count_shared_triggers_for_both_signals():
    from services.cleaning import markers

    text = "Wait, actually no. Hmm, I was wrong. Actually, wait. 等等，不对，我又搞错了。"
    low = text.lower()
    hes, cas = markers.marker_upper_bounds(text, low)
    # Each bound is still the plain sum of its own triggers' counts.
    assert hes == sum(map(low.count, markers._HES_TRIGGERS_EN)) + sum(map(text.count, markers._HES_TRIGGERS_CJK))
    assert cas == sum(map(low.count, markers._CAS_TRIGGERS_EN)) + sum(map(text.count, markers._CAS_TRIGGERS_CJK))
    # Five cascade markers, shared triggers among them, put the bound at the response limit of
    # five exactly, and the cascade check behind it still fires.
    five = "Wait. Actually. Hmm. I was wrong. I made a mistake."
    assert markers.marker_upper_bounds(five, five.lower())[1] == 5
    found = DeadLoopFilter().stuck_evidence({"role": "assistant", "content": five})
    assert found is not None and found["check"] == "cascade"


def test_tool_loop_name_screen_passes_loops_and_leaves_changing_answers_to_the_full_key():
    # Four steps calling the same name: the screen lets them through, and equal answers still loop.
    same = [("get_status", '{"id": 3}', "pending")] * 4
    assert _loop_evidence(_agent("Check order 3.", same))["repeats"] == 4
    # Same names but new answers: past the screen, the full key finds no loop.
    moving = [("get_status", '{"id": 3}', f"pending {n}") for n in range(4)]
    assert _loop_evidence(_agent("Check order 3.", moving)) is None
    # A function given as a [name, arguments] list is named by its head, as its identity is.
    row = _agent("List files.", [("ls", "{}", "a.txt")] * 4)
    for m in row["messages"]:
        if m.get("tool_calls"):
            m["tool_calls"][0]["function"] = ["ls", {}]
    assert _loop_evidence(row)["repeats"] == 4


def test_an_ordinal_or_once_is_no_request_for_repetition():
    from services.cleaning.requests import asks_for_repetition

    assert not any(map(asks_for_repetition, ["第一次去日本要准备什么？", "再说一次也没关系", "第2回の打ち合わせ", "5번 문제 풀어줘"]))
    assert all(map(asks_for_repetition, ["把这句话抄三遍", "10回書いて", "다섯 번 반복해 줘", "say it 12 times"]))
    paragraph = "办理签证需要护照原件、照片和在职证明，递交后一般五个工作日出结果，也可以选择快递寄回。"
    row = [{"role": "user", "content": "第一次办签证要准备什么？"},
           {"role": "assistant", "content": "\n\n".join([paragraph] * 8)}]
    assert DeadLoopFilter().find_stuck(row) is not None


def test_japanese_self_corrections_are_hesitations():
    reply = ("答えは42です。いや、待ってください、計算し直します。6×7は…あれ、でも桁が違うかも。"
             "いや、やっぱりもう一度最初から計算します。")
    assert _row_dropped("6かける7はいくつ？", reply)
    # One correction in a long, settled answer is no dithering.
    assert not _row_dropped("6かける7はいくつ？", "42です。念のため検算すると、7を6回足して42になります。" * 3)


@pytest.mark.parametrize(("request_text", "reply"), [
    ("Write a two-line poem about rain for a birthday card.",
     "Hmm, wait. Let me think... Rain on the roof... no, wait, that's too plain. Let me start over. "
     "Hmm, maybe I should start with the smell of rain? Wait, no. Let me try again... hmm."),
    ("写一段关于月亮的小故事，一百字左右。",
     "嗯……等一下，我先想想开头。呃，从小兔子写起？不对，这个开头太普通了……嗯，让我再想想……呃……"),
    ("노을에 대한 짧은 동화 써 줘.", "음... 잠깐만요. 어떻게 시작하지... 아니, 다시 해 볼게요. 음... 잠깐, 처음부터 다시 쓸게요. 음..."),
])
def test_the_assistant_dithering_over_the_piece_it_should_write_is_stuck(request_text, reply):
    assert _row_dropped(request_text, reply)


def test_a_character_who_hesitates_in_the_piece_is_still_fiction():
    story = ('"Um, wait," Mia whispered, "let me think. Hmm... the door was open, no, wait, it was locked." '
             "Her brother sighed. \"Uh, you always say that.\" She paused, um, and counted the steps again.")
    assert not _row_dropped("Write a short scene where a nervous girl tells her brother a secret.", story)


def test_one_body_filled_in_under_each_day_asked_for_is_no_loop():
    days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    body = "- [ ] 20 push-ups\n- [ ] 10-minute stretch\n- [ ] Log water intake\n- [ ] Lights out by 11 pm"
    tracker = "**Weekly habit tracker**\n\n" + "\n\n".join(f"**{d}**\n{body}" for d in days)
    assert not _row_dropped("Make me a habit tracker for the week, the same four habits every day.", tracker)
    ko = "\n\n".join(f"**{d}요일**\n☐ 물 2L\n☐ 만 보 걷기\n☐ 야식 금지" for d in "월화수목금토일")
    assert not _row_dropped("매일 체크할 다이어트 표 만들어 줘.", ko)


def test_the_same_body_under_each_header_is_still_a_loop_when_no_period_was_asked():
    stuck = "\n\n".join(f"**Step {i}**\nRestart the router and wait two minutes, then check the light."
                        for i in range(1, 9))
    assert _row_dropped("My wifi keeps dropping. How do I fix it?", stuck)


def test_a_closing_paragraph_said_again_and_again_is_a_loop_whatever_came_before():
    good = "\n\n".join(f"Week {i}: read chapter {i}, then do the exercises at the end of it and review your notes."
                       for i in range(1, 9))
    closing = "Above all, be consistent. A little every day beats a lot once a week. Good luck with the exam!"
    stuck = good + ("\n\n" + closing) * 3 + "\n\nAbove all, be consistent. A little every"
    assert _row_dropped("Plan eight weeks of study for the exam.", stuck)
    # Said once, or twice, it is a closing line.
    assert not _row_dropped("Plan eight weeks of study for the exam.", good + ("\n\n" + closing) * 2)


def test_a_repeated_paragraph_the_user_asked_for_is_the_answer():
    chant = "\n\n".join(["We are one team, and together we will win this season."] * 4)
    assert not _row_dropped("Write our team chant four times so we can print it.", chant)


def test_japanese_recounts_and_corrections_of_corrections_are_hesitations():
    reply = ("答えは7個です。\n\nあ、いえ、失礼しました。6個です。\n\nいや、待ってください、数え直します。……やはり7個……"
             "ではなく6個です。すみません、もう一度確認します。訂正します、いや、先ほどの訂正を訂正します。")
    assert _row_dropped("1から100までで15の倍数はいくつ？", reply)


@pytest.mark.parametrize(("request_text", "line"), [
    ("習字の練習用に「がんばれ」を12行書いたテキストをください。", "がんばれ"),
    ("把“加油”写20行，我要打印出来贴墙上。", "加油"),
    ("'감사합니다'를 12줄 써 줘. 손글씨 연습용이야.", "감사합니다"),
])
def test_a_quoted_item_asked_for_on_n_lines_is_the_answer(request_text, line):
    assert not _row_dropped(request_text, "\n".join([line] * 12))


def test_a_daily_template_with_one_line_of_its_own_per_day_is_no_loop():
    extra = ["Plan the week", "Review flashcards", "Walk 15 minutes", "Review flashcards", "Write a weekly note"]
    days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
    body = "- [ ] Glass of water\n- [ ] 10 minutes of stretching\n- [ ] Check today's calendar\n- [ ] {}"
    tracker = "\n\n".join(f"**{d}**\n" + body.format(e) for d, e in zip(days, extra))
    assert not _row_dropped("Make a weekday morning checklist, mostly the same every day.", tracker)


@pytest.mark.parametrize("header", ["【{}】", "[{}]", "■ {}"])
def test_the_same_routine_under_bracketed_day_headers_asked_for_each_day_is_no_loop(header):
    body = "- 首回し（左右10回）\n- 肩のストレッチ（30秒）\n- 前屈（30秒）\n- スクワット（15回）"
    reply = "\n\n".join(header.format(d) + "\n" + body for d in ("月曜日", "火曜日", "水曜日", "木曜日", "金曜日"))
    assert not _row_dropped("平日の朝の5分ストレッチを曜日ごとに書いてください。毎日同じ内容でいいです。", reply)


def test_korean_recalculations_and_admitted_mistakes_are_hesitations():
    reply = ("합계는 120입니다.\n\n잠깐, 할인을 빼고 계산해야 하네요. 다시 계산하겠습니다. 합계는 108입니다.\n\n"
             "아니, 제가 잘못 계산했네요. 다시 하겠습니다.\n\n잠깐, 이것도 틀렸습니다. 처음부터 다시 계산하겠습니다.")
    assert _row_dropped("3만원짜리 4개에 10% 할인하면 얼마야?", reply)


def _numbered(heads_and_lines):
    return "Here you go:\n\n" + "\n".join(f"{i}. **{h}** — {line}" for i, (h, line) in enumerate(heads_and_lines, 1))


@pytest.mark.parametrize(("user", "reply"), [
    # One museum named eight times in other words, each with a new line of text.
    ("Suggest 8 things to do in Paris on a first visit.", _numbered([
        ("The Louvre museum", "home of the Mona Lisa."), ("Seine river cruise", "best at dusk."),
        ("Louvre museum tour", "book the morning slot."), ("Museum of the Louvre", "plan half a day."),
        ("Louvre (main museum)", "enter by the Carrousel."), ("Visit the Louvre museum", "it is huge."),
        ("Louvre museum at night", "open late on Fridays."), ("Louvre museum gardens", "the Tuileries are next door.")])),
    # 同一本书换着说法列了六次。
    ("推荐几款适合新手的相机。", _numbered([
        ("佳能EOS R50", "对焦快。"), ("佳能EOS R50套机", "适合旅行。"), ("索尼ZV-E10", "适合视频。"),
        ("佳能EOS R50", "画质好。"), ("佳能EOS R50（白色）", "颜值高。"), ("佳能EOS R50", "性价比高。"),
        ("佳能EOS R50", "重量轻。")])),
    # 同じ店を何度も（一字一句同じ見出し）。
    ("大阪でおすすめのたこ焼き屋を教えて。", _numbered([
        ("わなか 千日前本店", "外はカリッと。"), ("会津屋", "元祖の味。"), ("わなか 千日前本店", "行列必至。"),
        ("わなか 千日前本店", "ソースが絶品。"), ("わなか 千日前本店", "駅から近い。"), ("わなか 千日前本店", "夜も営業。")])),
])
def test_a_list_naming_one_thing_again_and_again_is_a_loop(user, reply):
    found = repeated_list_head(reply, user)
    assert found is not None and found["check"] == "repeated_list_head"
    assert _row_dropped(user, reply)


@pytest.mark.parametrize(("user", "reply"), [
    # A template: one verb in every head, a different thing after it.
    ("Suggest 8 things to do in Paris.", _numbered([
        (f"Visit {place}", "worth it.") for place in ("the Louvre", "Versailles", "Montmartre", "the Orsay",
                                                   "the Pantheon", "Sainte-Chapelle", "the Marais", "Giverny")])),
    # The topic the user asked for is in every head.
    ("List the Harry Potter books in order.", _numbered([
        (f"Harry Potter and the {t}", "by J.K. Rowling.") for t in (
            "Philosopher's Stone", "Chamber of Secrets", "Prisoner of Azkaban", "Goblet of Fire",
            "Order of the Phoenix", "Half-Blood Prince", "Deathly Hallows")])),
    # A schedule: the unit word and the city repeat by design.
    ("Plan my week.", _numbered([(f"Day {d}: Osaka {x}", y) for d, (x, y) in enumerate((
        ("castle", "go early."), ("aquarium", "see the whale shark."), ("Dotonbori", "street food."),
        ("Umeda", "sky building at sunset."), ("Shinsekai", "kushikatsu lunch."), ("Expo park", "rent bikes."),
        ("Namba", "shopping, then fly home.")), 1)])),
    # Checkbox labels repeat by design.
    ("출국 전 체크리스트 만들어 줘.", "체크리스트:\n" + "\n".join(
        f"- [ ] 확인: {x}" for x in ("여권", "비자", "항공권", "숙소", "보험", "환전", "충전기"))),
    # Sentences of one lesson plan share a word (学生们) without naming one thing.
    ("设计一节历史课。", "\n".join(f"{i}. 学生们{x}。" for i, x in enumerate(
        ("阅读史料并做笔记", "分组讨论战争原因", "用时间线整理事件", "表演一段历史短剧", "互相评价表演", "写一篇小结"), 1))),
])
def test_templates_topics_schedules_and_labels_are_not_a_repeated_list(user, reply):
    assert repeated_list_head(reply, user) is None
    assert not _row_dropped(user, reply)


@pytest.mark.parametrize("text", [
    # Fillers and take-backs in Chinese: 嗯，/ 等一下，/ 不，还是 / 算了，
    "嗯，等一下，不对，我好像查错城市了……其实没错。不，还是再确认一下吧，重新查一遍。",
    # A correction labelled again and again, in Chinese, Korean and English.
    "280 × 0.8 = 224，最后 194 元。\n\n更正：应该是 200 元。\n\n再更正：不对，194 元。\n\n再次更正：还是 200 元。\n\n"
    "最终更正：194 元。\n\n更正：200 元。",
    "약 2시간 36분 걸립니다.\n\nCorrection: 2시간 39분이에요.\n\n정정: 2시간 36분이 맞아요.\n\n다시 정정: 2시간 46분입니다.\n\n"
    "정정: 2시간 40분입니다.\n\nCorrection again: 2시간 36분입니다. 아니, 2시간 40분이요.",
])
def test_cjk_fillers_and_labelled_corrections_are_stuck(text):
    assert _stuck(text)


def test_one_labelled_correction_or_a_plain_um_in_quotes_is_not_stuck():
    assert not _stuck("答案是 194 元。\n\n更正：上面的单位写错了，应为 194 元（人民币）。这是按先打折、再用券的顺序计算的结果。")
    assert not _stuck("The total is $194.\n\nCorrection: the coupon applies after the discount, so the total stays $194.")


def test_one_sentence_said_again_and_again_after_a_good_answer_is_stuck():
    from services.cleaning.deadloop import repeated_units

    answer = ("换季护肤可以这样做：1. 先做好清洁，但别过度去角质。2. 换成更滋润的面霜。3. 白天坚持涂防晒。"
              "4. 多喝水，少熬夜，饮食清淡一些。5. 如果出现刺痛或红肿，先停用新产品。")
    found = repeated_units(answer + "记得保湿。" * 7)
    assert found is not None and found["count"] == 7 and found["share"] < 0.5
    # A short run after the same answer is not stuck: the run must fill the text.
    assert repeated_units(answer + "记得保湿。" * 4) is None


def test_an_assistant_that_restarts_its_piece_again_and_again_is_stuck():
    from services.cleaning.deadloop import DeadLoopFilter, restarts

    reply = ("기차가 역에 들어서자, 그녀는—\n\n아니다, 이건 너무 흔한 시작이네요. 다시 쓸게요.\n\n"
             "비 오는 플랫폼 위에서—\n\n아니다, 분위기가 안 맞아요. 다시 쓸게요.\n\n"
             "그날 아침, 기차는—\n\n아니다, 처음이랑 비슷하네요. 다시 쓸게요.")
    assert restarts(reply) is not None
    rows = [{"messages": [{"role": "user", "content": "기차역에서 재회하는 장면을 짧게 써 주세요."},
                          {"role": "assistant", "content": reply}]}]
    kept, dropped = DeadLoopFilter()(rows)
    assert dropped and dropped[0]["drop_evidence"]["check"] == "restarts"
    # Quoted restarts are the characters' (a writer in the story), and two are a change of mind.
    assert restarts('The novelist sighed. "Scratch that," she said. "Let me rewrite it. Let me start over."') is None
    assert restarts("Scratch that, let me rewrite it with a warmer tone: Dear Ana, thank you for the lovely evening.") is None


def test_a_reply_restating_its_point_with_connective_after_connective_is_stuck():
    from services.cleaning.deadloop import restatements

    looping = ("운동은 이렇게 시작하세요: 걷기부터, 주 3회, 30분씩. 결국 중요한 건 습관입니다. 다시 말해, 매일 하는 게 핵심이에요. "
               "요컨대 꾸준함이 전부예요. 한마디로, 쉬지 않는 게 답입니다. 결론적으로 습관이 제일 중요해요.")
    found = restatements(looping)
    assert found is not None and found["count"] >= 4
    assert restatements("The bug was the timezone. In short, store UTC and convert on display. In conclusion, "
                        "add a test that runs in two zones.") is None


def test_one_turn_emitting_the_same_call_again_and_again_is_a_loop():
    call = {"type": "function", "function": {"name": "get_quote", "arguments": '{"symbol": "ACME"}'}}
    calls = [{"id": f"c{i}", **call} for i in range(6)]
    msgs = [{"role": "user", "content": "What's ACME trading at?"}, {"role": "assistant", "content": "", "tool_calls": calls}]
    found = DeadLoopFilter().find_stuck(msgs)
    assert found is not None and found["check"] == "parallel_repeat" and found["repeats"] == 6
    # Parallel calls that differ (three symbols) fetch three things.
    distinct = [{"id": f"c{i}", "type": "function",
                 "function": {"name": "get_quote", "arguments": f'{{"symbol": "{s}"}}'}}
                for i, s in enumerate(["ACME", "INIT", "GLOBX", "UMB"])]
    msgs[1]["tool_calls"] = distinct
    assert DeadLoopFilter().find_stuck(msgs) is None


def test_a_count_is_no_request_for_repetition_but_n_quoted_characters_are():
    from services.cleaning.requests import asks_for_repetition

    # 次 counts occurrences: a handshake's three steps, "why three times", are no repetition asked.
    assert not any(map(asks_for_repetition, ["TCP 为什么要三次握手？", "这个接口为什么会调用两次？"]))
    assert all(map(asks_for_repetition, ["把“谢谢”说十次", "Give me a string of exactly 40 'a' characters"]))


@pytest.mark.parametrize(("request_text", "reply"), [
    ("Give me six different ways to save money on groceries.",
     "Here you go:\n1. Cook at home more often.\n2. Cook your own meals instead of eating out.\n"
     "3. Try to cook at home most days.\n4. Home cooking saves a lot.\n5. Make cooking at home a habit.\n"
     "6. Cook at home with friends.\n\nSmall changes add up!"),
    ("推荐五个不一样的放松方法", "以下是五个方法：\n1. 睡前听音乐放松。\n2. 多听轻音乐。\n3. 听一些舒缓的音乐。\n"
     "4. 用音乐帮助入睡。\n5. 每天听音乐十分钟。"),
    ("朝の習慣を5つ教えてください。", "おすすめの習慣です。\n1. 起きたら水分を取る。\n2. コップ一杯の水分補給をする。\n"
     "3. 朝一番に水分をしっかり取る。\n4. 白湯で水分を補う。\n5. 寝起きの水分補給を忘れない。"),
])
def test_a_list_of_different_things_that_says_one_thing_is_stuck(request_text, reply):
    found = DeadLoopFilter().find_stuck([{"role": "user", "content": request_text},
                                         {"role": "assistant", "content": reply}])
    assert found is not None and found["check"] == "paraphrased_list", found


@pytest.mark.parametrize(("request_text", "reply"), [
    # Nobody asked for different things: a routine repeats its word by design.
    ("What should my morning look like?", "1. Drink water.\n2. Drink coffee.\n3. Drink a smoothie.\n"
     "4. Drink tea at ten.\n5. Drink water again."),
    # The topic named in the lead-in is in every item.
    ("Tell me five different jokes.", "Five jokes about cats:\n1. Why did the cat sit on the computer? To keep an "
     "eye on the mouse.\n2. What do you call a pile of cats? A meowtain.\n3. Cats never lie; they just purr-vert.\n"
     "4. My cat likes to cook; she is a purr-fect chef.\n5. A cat walks into a bar... and knocks a glass off it."),
    # A template: the same opening verb in every item.
    ("Give me 5 different weekend ideas.", "1. Visit a farmers market.\n2. Visit the science museum.\n"
     "3. Visit a friend you have not seen.\n4. Visit the lake at sunrise.\n5. Visit a bookshop cafe."),
])
def test_lists_that_share_a_word_by_design_are_not_paraphrases(request_text, reply):
    assert DeadLoopFilter().find_stuck([{"role": "user", "content": request_text},
                                        {"role": "assistant", "content": reply}]) is None


def test_a_request_for_several_different_things_is_told_apart():
    from services.cleaning.requests import asks_for_variety

    assert all(map(asks_for_variety, ["Give me 8 distinct ideas", "列五个不一样的", "質問を10個教えて", "여러 개 짚어줘"]))
    assert not any(map(asks_for_variety, ["What time is it in Tokyo?", "这个函数是干什么的？", "今日は何曜日？"]))


def test_a_comparison_table_whose_columns_never_differ_is_stuck():
    from services.cleaning.deadloop import identical_columns

    table = ("| Feature | Laptop A | Laptop B | Laptop C |\n|---|---|---|---|\n"
             "| Screen | Great display | Great display | Great display |\n"
             "| Battery | Long battery life | Long battery life | Long battery life |\n"
             "| Price | Good value | Good value | Good value |\n")
    found = identical_columns(table)
    assert found is not None and found["check"] == "identical_columns" and found["rows"] == 3
    # A checklist to fill in repeats its empty boxes by design; one differing cell is a comparison.
    checklist = "| Day | AM | PM | Night |\n|---|---|---|---|\n" + "".join(f"| {d} | [ ] | [ ] | [ ] |\n" for d in "MTWTF")
    assert identical_columns(checklist) is None
    assert identical_columns(table.replace("Good value | Good value | Good value", "Cheap | Mid | Pricey")) is None


def test_one_code_block_shown_under_every_heading_is_stuck():
    from services.cleaning.deadloop import repeated_code_block

    block = "```python\nnames = [n.upper() for n in people]\nprint(names)\n```\n"
    reply = "".join(f"**Step {i}: {h}**\n{block}\n" for i, h in enumerate(["basic", "filter", "nested", "dict"], 1))
    found = repeated_code_block(reply)
    assert found is not None and found["repeats"] == 4
    # Different examples, or a short shared line, are not a repeat.
    assert repeated_code_block(reply.replace("people]", "people if n]", 1).replace("people]", "rows]", 1)) is None
    assert repeated_code_block("```\nls\n```\n" * 4) is None


def test_a_packing_list_naming_one_thing_in_every_item_is_stuck():
    items = ["Tent", "Family tent", "4-person tent", "Big tent", "Sturdy tent", "Waterproof tent"]
    reply = "Here's your list:\n" + "".join(f"{i}. {t}\n" for i, t in enumerate(items, 1))
    found = DeadLoopFilter().find_stuck([{"role": "user", "content": "Make me a packing list for a family camping trip."},
                                         {"role": "assistant", "content": reply}])
    assert found is not None and found["check"] == "paraphrased_list", found


def test_a_few_items_taking_turns_fill_a_stuck_list():
    reply = "Synonyms for happy:\n" + "".join(f"{i}. {w}\n" for i, w in enumerate(["glad", "joyful", "cheerful"] * 12, 1))
    found = DeadLoopFilter().find_stuck(chat("Give me 20 synonyms for happy.", reply)["messages"])
    assert found is not None and found["check"] == "repeated_items", found


def test_a_schedule_repeating_its_entries_between_headers_is_not_stuck():
    months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December"]
    reply = "".join(f"**{m}**\n- 1st: rent $1,200\n- 15th: phone $40\n- 20th: gym $30\n- notes for {m}: check meter\n"
                    for m in months)
    assert DeadLoopFilter().find_stuck(chat("Bill reminders for every month of next year.", reply)["messages"]) is None


def test_the_screening_pattern_matches_where_either_family_does():
    from services.cleaning.deadloop import _LOOP_CUE_RE, _RESTART_RE, _RESTATE_RE

    for text in ["Scratch that. Let me rewrite it.", "In other words, it fails.", "总之，不行。", "plain text", "요컨대 좋다"]:
        either = _RESTART_RE.search(text) or _RESTATE_RE.search(text)
        found = _LOOP_CUE_RE.search(text)
        assert (found is None) == (either is None) and (found is None or found.start() == either.start()), text


def test_restarts_after_an_interjection_and_new_restating_cues_are_loops():
    restarts = ("Here's the summary:\n- The council\n\nActually, let me start over.\n\nHere's the summary:\n- A plan\n\n"
                "Hmm, let me redo this.\n\nHere's the summary:\n- On Tuesday\n\nI'll start again.\n\nHere's the summary:")
    found = DeadLoopFilter().find_stuck(chat("Summarize this in 3 bullets: ...", restarts)["messages"])
    assert found is not None and found["check"] == "restarts", found
    restating = ("Your editor must use the venv's Python. Put differently, the interpreter must match. That is to say, "
                 "use one environment. Basically, point the editor at it. Essentially, the two must be the same. "
                 "In other words, select the .venv interpreter.")
    found = DeadLoopFilter().find_stuck(chat("How do I fix ModuleNotFoundError in VS Code?", restating)["messages"])
    assert found is not None and found["check"] == "restatements", found


def test_restarting_an_explanation_from_the_top_in_japanese_is_a_loop():
    reply = ("相続放棄の手続きを説明します。\n\nもう一度最初から整理して説明します。\n\n期限は3か月です。\n\n"
             "いえ、最初から説明し直します。\n\n改めて、最初から順を追って説明します。\n\nもう一度最初から整理して説明します。")
    found = DeadLoopFilter().find_stuck(chat("相続放棄の流れを教えて", reply)["messages"])
    assert found is not None and found["check"] == "restarts", found


def test_list_head_evidence_is_the_same_under_any_string_hash_seed():
    import os
    import subprocess
    import sys

    code = ("from services.cleaning.deadloop import repeated_list_head\n"
            "items = ['香りでほどく毎日の心地よさ', '心地よい香りで毎日を', '毎日の心地よい香り時間', '香りと心地よさの毎日',"
            " '心地よさを毎日に', '毎日心地よい香りを']\n"
            "print(repeated_list_head(''.join(f'{i}. {t}\\n' for i, t in enumerate(items, 1))))")
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3", "4")}
    assert len(seen) == 1 and "repeated_list_head" in seen.pop()
