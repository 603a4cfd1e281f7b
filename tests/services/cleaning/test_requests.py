"""What a request asks for: bounds on the answer, code, repetition, the same entries per thing."""

import pytest

from services.cleaning.requests import (
    asks_for_brevity,
    asks_for_code,
    asks_for_composition,
    asks_for_each_period,
    asks_for_repetition,
    expects_short_answer,
)


@pytest.mark.parametrize("text", [
    'Reply "yes" or "no" only.', "is the office open on Sunday? y/n", "ISO code only please", "Only the romaji, thanks.",
    "「はい」か「いいえ」でお願いします", "説明は不要です。コマンドだけで。", "日付だけを抜き出して", "도시 이름만",
])
def test_bounds_on_the_answer_in_every_form(text):
    assert asks_for_brevity(text)


@pytest.mark.parametrize("text", ["Explain how DNS resolution works.", "Tell me about your weekend plans."])
def test_open_requests_set_no_bound(text):
    assert not asks_for_brevity(text)


def test_a_long_system_prompt_does_not_lengthen_a_short_question():
    system = "你是一家物流公司的客服助手，负责回答运费、时效和包装相关的问题。请礼貌、准确。" * 2
    assert expects_short_answer("寄到广州要几天？", system=system)
    assert not expects_short_answer("详细解释一下为什么寄到广州要三天。", system=system)


def test_code_asked_for_with_a_word_between_noun_and_verb():
    assert asks_for_code("로그인 API 코드 전부 짜줘")


@pytest.mark.parametrize(("text", "asked"), [
    ("「がんばれ」を10回書いて", True), ("ビルドが2回走るのはなぜ？", False),
    ("'화이팅' 다섯 번 줄바꿈해서 써 줘", True), ("테스트가 두 번 실행돼요. 왜죠?", False),
])
def test_a_count_asks_for_repetition_only_with_a_verb_that_writes_or_says(text, asked):
    assert asks_for_repetition(text) is asked


@pytest.mark.parametrize("text", [
    "Make a release checklist for each service: api, web, worker.", "チームごとに同じ項目で目標を書いて",
    "지점별로 점검표 만들어 줘", "给每个部门列一份同样的清单", "Take it twice a day for a week: make me a tracker.",
    "1日3回、7日分のチェック表を作って",
])
def test_the_same_entries_per_thing_or_per_day(text):
    assert asks_for_each_period(text)


def test_bounds_and_repetition_in_more_forms():
    assert asks_for_brevity("HTTP の status code は？番号だけで OK")
    assert asks_for_repetition("检查表20项，每一项后面都要有同样的勾选栏")


def test_a_value_looked_up_by_name_and_entries_per_server():
    assert expects_short_answer("quick one: which HTTP status code is 'Too Many Requests'?")
    assert asks_for_each_period("서버마다 같은 항목으로 체크할 수 있게 해 주세요")


@pytest.mark.parametrize(("request_text", "piece"), [
    ("このエラーメッセージの意味を教えてください。", False),
    ("에러 메시지가 무슨 뜻인지 알려 줘", False),
    ("这个报错消息是什么意思？帮我写个解释", False),
    ("お客様へのお詫びのメッセージを書いてください。", True),
    ("팀원들에게 보낼 메시지 써 줘", True),
    ("帮我写一条消息给房东，说下周交租", True),
])
def test_an_error_message_asked_about_is_no_piece_to_send(request_text, piece):
    assert asks_for_composition(request_text) is piece


@pytest.mark.parametrize("request_text", ["Pythonで `0.1 + 0.2 == 0.3` は True？False？", "結果だけ教えて", "答えのみで"])
def test_either_true_or_false_and_the_answer_alone_bound_the_reply(request_text):
    assert asks_for_brevity(request_text)
