from services.cleaning.deadloop import DeadLoopFilter, ngram_repetition


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
    text = "。".join(["请重新启动服务器"] * 6) + "。"
    assert not _stuck(text)


def test_cascade_of_five_actually_fires():
    assert _stuck(" ".join(["Actually, the value is different here."] * 5))


def test_repetition_signal_and_minimum():
    assert ngram_repetition("a b c d e f g h " * 3 + "a b c d e f") > 0.45
    assert ngram_repetition("a b c d e f g h " * 3 + "a b c d e") == 0.0


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
