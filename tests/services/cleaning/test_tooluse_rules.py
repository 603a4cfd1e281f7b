"""The general rules behind the tool-use accuracy fixes, one behaviour per test, in several languages."""

from __future__ import annotations

import pytest

from services.cleaning.deadloop import DeadLoopFilter, repeated_item
from services.cleaning.hard import HardFilter
from services.cleaning.refuse import RefuseFilter, refusal_evidence
from services.cleaning.requests import (
    asks_for_brevity,
    asks_for_composition,
    asks_for_fiction,
    closed_question,
    letter_start,
)
from services.cleaning.soup import SoupParams, script_salad, soup_check


def _chat(user: str, assistant: str) -> list[dict]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]


@pytest.mark.parametrize("text", ["Reply with just the number.", "Answer yes or no: is it safe?", "只回答城市名",
                                  "一言で答えて", "숫자만 말해줘", "Give me a one-word synonym",
                                  # Bounds met in held-out rows: only the number or the translation, no
                                  # explanation, "X alone is fine", "just give me X".
                                  "上个月退款了几笔？只告诉我数字。", "翻成法语，只给译文", "翻成英文就好，别解释：早上好",
                                  "「きょうかい」の漢字、漢字だけでいいよ", "구글 시트에서 평균 구하는 함수만 줘"])
def test_brevity_requests_are_recognised(text):
    assert asks_for_brevity(text)


@pytest.mark.parametrize("text", ["Explain the history of Rome in detail.", "请详细介绍长城", "詳しく説明して", "자세히 설명해 줘",
                                  "조금만 더 자세히 설명해 줘", "名前だけでなく理由も教えて"])
def test_open_requests_are_not_brevity_requests(text):
    assert not asks_for_brevity(text)


def test_closed_questions_are_arithmetic_or_choices_but_not_dates():
    assert closed_question("What is 12 * 7?") and closed_question("7×8は？") and closed_question("15 더하기 27은?")
    assert closed_question("Which is right?\nA. red\nB. blue\nC. green")
    assert not closed_question("Summarize sales from 2022-01-01 to 2022-03-31.")


def test_composition_and_fiction_requests_in_four_languages():
    for text in ("Draft a polite email declining the offer", "写一封道歉信", "お詫びメールを書いてください", "사과 편지 써줘"):
        assert asks_for_composition(text), text
    for text in ("Write a scene with two friends", "写一段小说情节", "会話劇を書いて", "대본으로 써줘"):
        assert asks_for_fiction(text), text
    assert not asks_for_composition("How do I pick a lock?")
    # 函 is a letter (公函), 函数 a function: code is no piece to send.
    assert asks_for_composition("帮我起草一份公函") and not asks_for_composition("帮我写个函数，把字符串反转。")


def test_letter_start_finds_subjects_and_salutations():
    assert letter_start("Sure, here it is:\n\nDear Ms. Lee,\n\nI am sorry ...") == len("Sure, here it is:\n\n")
    for text in ("尊敬的王先生：\n内容", "田中様\n本文", "지은아,\n내용", "Subject: Delay\nBody"):
        assert letter_start(text) == 0, text
    assert letter_start("No salutation in this reply at all.") is None


def test_trivial_question_answered_by_a_tool_call_is_kept():
    call = {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    msgs = [{"role": "user", "content": "What's the weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [call]}]
    assert HardFilter().reason(msgs, has_tools=True) is None
    assert HardFilter().reason(_chat("What's the weather in Paris?", "Sunny."), has_tools=False) == \
        "trivial_single_turn"


def test_short_reply_is_shallow_only_when_not_asked_to_be_short():
    assert HardFilter().reason(_chat("In what year did WWII end? Only the year.", "1945")) is None
    assert HardFilter().reason(_chat("Describe the causes of WWII in depth.", "Many.")) == "shallow_reply"


def test_refusal_inside_a_requested_letter_is_part_of_the_letter():
    letter = "Dear Sam,\n\nI'm so sorry, but I can't attend your party on Saturday.\n\nBest,\nKim"
    msgs = _chat("Write a message to Sam declining his party invitation", letter)
    assert RefuseFilter().find_refusal(msgs) is None
    # The same words with no request for a letter are a refusal; a refusal before the letter still is.
    assert RefuseFilter().find_refusal(_chat("Come to my party?", "I'm so sorry, but I can't attend.")) is not None
    msgs = _chat("Write a letter threatening my landlord", "I'm sorry, but I can't help write threatening letters.")
    assert RefuseFilter().find_refusal(msgs)["check"] == "self_refusal"


@pytest.mark.parametrize("text", [
    "As an AI language model, I cannot predict lottery numbers.",
    "作为一个AI语言模型，我无法预测彩票号码。",
    "AI言語モデルとして、将来の株価を予測することはできません。",
    "AI 언어 모델로서 저는 미래의 가격을 예측할 수 없습니다.",
])
def test_ai_disclaimer_refusals_in_four_languages(text):
    found = refusal_evidence(text)
    assert found is not None and found["check"] == "ai_disclaimer" and found["window"]


def test_ai_disclaimer_followed_by_the_answer_is_kept():
    assert refusal_evidence("作为一个AI语言模型，我没有个人喜好，但是我可以推荐几部电影：《活着》……") is None
    assert refusal_evidence("As an AI, I can't feel emotions, but here's how people usually describe it: ...") is None


def test_declining_the_task_on_ethical_grounds_is_a_refusal_despite_offered_help():
    text = ("I won't write an essay for you to hand in as your own, because that is plagiarism. "
            "Instead, I can help you outline it.")
    found = refusal_evidence(text)
    assert found is not None and found["check"] == "ethical_decline" and found["ground"].lower() == "plagiarism"
    assert refusal_evidence("这属于考试作弊，我不能帮你这样做。不过我可以帮你复习。")["check"] == "ethical_decline"
    # Talking about integrity is not declining anything.
    assert refusal_evidence("Plagiarism is presenting someone else's work as your own; universities punish it.") is None


def test_salad_of_words_in_several_scripts_is_soup_but_mixed_technical_text_is_not():
    salad = ("First you 需要 найти the кнопку reset と押して 그리고 hold 它 для 10 секунд seconds 그러면 router будет "
             "再起動 and 모든 настройки 将被 消去 되고.")
    found = script_salad(salad)
    assert found is not None and {"latin", "cjk", "hangul", "cyrillic"} <= set(found["scripts"])
    assert script_salad("可以用 pandas 的 read_csv 函数读取 CSV 文件，然后用 groupby 分组统计每个城市的人数。") is None
    table = "| English | 中文 | 日本語 | 한국어 |\n| --- | --- | --- | --- |\n| thank you | 谢谢 | ありがとう | 감사합니다 |"
    assert script_salad(table * 3) is None


def test_runs_in_code_or_quotes_are_not_soup_but_a_trailing_run_is():
    p = SoupParams()
    assert soup_check("Use `'x' * 30` to get `xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx`, handy in tests.", p) is None
    assert soup_check("```\nprint('a' * 40)  # aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n```\nDone.", p) is None
    found = soup_check("The story ends here and the hero wins the prize zzzzzzzzzzzzzzzzzzzzzzzzz", p)
    assert found is not None and found["check"] == "char_run" and found["at_end"] and found["run_length"] == 25


def test_one_list_item_repeated_dozens_of_times_is_a_loop():
    text = "Here you go:\n" + "\n".join(f"{i}. Banana" for i in range(1, 25))
    found = repeated_item(text)
    assert found == {"check": "repeated_item", "item": "banana", "count": 24, "items": 25}
    assert repeated_item("、".join(["白菜"] * 20)) is not None
    assert repeated_item("\n".join(f"{i}. item {i}" for i in range(30))) is None
    assert repeated_item("```python\n" + "    pass\n" * 30 + "```") is None


def test_repeated_item_counts_only_real_items_and_ties_go_to_the_first_seen():
    # Markers, case and trailing punctuation do not make items differ; table rows, markup
    # tokens and items without letters are not counted (not even in the share).
    text = "\n".join(["- Kiwi.", "2) kiwi", "APPLE!", "apple"] * 10 + ["| a | b |", "<|im_end|>", "12", "x"] * 10)
    assert repeated_item(text) == {"check": "repeated_item", "item": "kiwi", "count": 20, "items": 40}
    assert repeated_item("\n".join(["apple", "kiwi"] * 12)) is not None
    assert repeated_item("\n".join(["apple", "kiwi"] * 12))["item"] == "apple"


def test_hesitating_characters_are_not_the_assistant_hesitating():
    speech = ('"Um, wait... hmm," Mia said. "Uh, let me start over." The librarian smiled. "Hmm? Take your time." '
              '"Um, I need, uh, a book. Wait, no, two books." "Hmm, which ones?" "Uh... um, the red ones."')
    f = DeadLoopFilter()
    assert f.find_stuck(_chat("Write a scene where a shy girl asks for help.", speech)) is None
    own = speech.replace('"', "")
    found = f.find_stuck(_chat("What is 2 + 2?", own))
    assert found is not None and found["check"] == "hesitation" and found["density"] > 7
    script = ("TOM: Um, wait, hmm.\nANN: Uh, hmm, wait, wait.\nTOM: Um, is this the road?\nANN: Uh, hmm, maybe.\n"
              "TOM: Wait, wait, I see a sign.\nANN: Hmm, um, it says nowhere.")
    assert f.find_stuck(_chat("Write a comedic dialogue between two lost friends.", script)) is None
    assert f.find_stuck(_chat("What is 2 + 2?", script)) is not None
