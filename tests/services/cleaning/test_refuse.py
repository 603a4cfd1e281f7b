import pytest

from services.cleaning.refuse import RefuseFilter, is_refusal, refusal_evidence
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
    # Business Japanese: "we do not take such requests" is the same decline.
    assert is_refusal("恐れ入りますが、個別のレポート作成のご依頼は承っておりません。")
    assert is_refusal("申し訳ございませんが、そういったご相談は当窓口では受け付けておりません。")
    assert not is_refusal("当店では現金でのお支払いのみ承っております。カードはご利用いただけません。")


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


# --- contractions and wider task verbs (each language) ---------------------------------------

@pytest.mark.parametrize("text", [
    "I'm unable to translate legal contracts.", "I am not able to recommend a specific stock.",
    "I'm not able to do that.", "I'd rather not predict how the match will end.",
    "We're unable to give you a refund estimate.", "I won't tell you where she lives.",
])
def test_contracted_refusals_with_any_task_verb_are_caught(text):
    assert is_refusal(text)
    assert is_refusal(text) == is_refusal(text + " \u00e9")  # ASCII fast path agrees


@pytest.mark.parametrize("text", [
    "I can't help thinking the second layout reads better: the headings line up with the grid.",
    "I cannot help but admire how compact this proof is; each lemma is used exactly once.",
    "I can't tell which Python version you run, so here is code that works on 3.8 and later.",
    "I can't tell you how glad I am that the migration worked.",
])
def test_idioms_and_discerning_are_not_refusals(text):
    assert not is_refusal(text)


# --- AI self-identification in the sentence of an inability ------------------------------------

@pytest.mark.parametrize("text", [
    "I'm only an AI, so I cannot choose a baby name for you.",
    "As a large language model, I have no access to your calendar and so I can't move the meeting.",
    "我仅仅是一个AI，没有能力判断这块玉是真是假。",
    "身为AI助手，我没办法替您挑选结婚对象。",
    "私はAIアシスタントなので、今日の為替レートをお調べすることはできません。",
    "인공지능 비서인 저로서는 병원 예약을 대신 잡아 드릴 수가 없습니다.",
    "As an AI, 我无法确认 this bus schedule。",
])
def test_any_ai_self_identification_with_an_inability_is_a_disclaimer(text):
    found = refusal_evidence(text)
    assert found is not None and found["check"] == "ai_disclaimer", (text, found)


@pytest.mark.parametrize("text", [
    "I'm an AI, so I don't sleep, but here is what sleep scientists say: adults need seven to nine hours, "
    "and keeping a regular wake-up time matters more than the hour you go to bed.",
    "我是AI，不会口渴，不过可以告诉你：成年人每天大约需要喝1.5到2升水，运动或天热时要多喝一些，"
    "小便颜色偏深就说明该补水了，一次不要猛灌，少量多次更好。",
])
def test_ai_aside_without_an_inability_or_followed_by_content_is_kept(text):
    assert refusal_evidence(text) is None


@pytest.mark.parametrize("text", [
    "To descale a kettle, fill it halfway with equal parts water and white vinegar, bring it to the boil, "
    "let it stand for an hour, then rinse it twice and boil plain water once to remove the smell. "
    "As an AI I cannot see your kettle, so check the maker's manual first.",
    "煮鸡蛋冷水下锅，水开后转中火煮八分钟是全熟，六分钟是溏心。煮好后立刻放进冷水里泡两分钟，蛋壳就很好剥。"
    "如果鸡蛋刚从冰箱拿出来，先在室温放十分钟，免得下锅时裂开。作为AI，我无法尝到你的鸡蛋，火候请按自己的口味调整。",
    "お米は研いだあと三十分ほど水に浸けてから炊くと、芯が残らずふっくら仕上がります。水加減は米一合に対して"
    "二百ミリリットルが目安で、新米なら少し減らしてください。炊き上がったらすぐに全体をほぐして余分な蒸気を逃がします。"
    "AIとして実際に味見をすることはできませんが、好みで調整してください。",
])
def test_an_ai_disclaimer_after_a_full_answer_qualifies_it(text):
    assert refusal_evidence(text) is None


def test_an_apology_that_the_task_cannot_be_done_still_refuses_at_the_end():
    text = ("Cubic equations need a method such as Cardano's formula, which is long and error-prone. "
            "A computer algebra system handles it well, and there are many online solvers. "
            "I'm sorry, but I cannot provide the specific roots here.")
    assert is_refusal(text)


# --- humble-form declines without an apology (ja, ko) -------------------------------------------

@pytest.mark.parametrize("text", [
    "そのご依頼はお受けできません。", "個人の住所をお教えすることはできません。",
    "그 파일의 비밀번호는 알려 드릴 수 없어요.", "이 계약서는 검토해 드리기 어렵습니다.",
])
def test_humble_form_declines_need_no_apology(text):
    assert is_refusal(text)


def test_humble_form_that_is_not_declined_is_kept():
    assert not is_refusal("ご質問にお答えします。まず、東京から大阪までは新幹線で約二時間半です。")
    assert not is_refusal("네, 바로 알려 드릴게요. 서울에서 부산까지는 KTX로 약 두 시간 반 걸립니다.")


# --- ethical declines whose object is the user's graded work -------------------------------------

@pytest.mark.parametrize("text", [
    "I won't do your lab report for you, but tell me which result confuses you and I'll explain the concept.",
    "I'm not going to write a paper for you to turn in under your name.",
    "我不能替你写完这份课程报告，不过可以帮你梳理思路。",
    "この課題の解答をそのままお伝えすることはできません。考え方のヒントなら出せます。",
    "과제를 대신 작성해 드릴 수는 없어요. 대신 개요를 같이 잡아 볼까요?",
])
def test_declining_to_do_the_users_graded_work_is_a_refusal(text):
    found = refusal_evidence(text)
    assert found is not None and found["check"] in ("ethical_decline", "self_refusal"), (text, found)


def test_naming_the_work_without_doing_it_for_the_user_is_no_ethical_decline():
    text = "I can't open your assignment PDF, but if you paste the questions here I'll go through each one with you."
    assert refusal_evidence(text) is None
    assert refusal_evidence("作为一个人工智能助手，我不能替你做这样的人生决定。")["check"] == "ai_disclaimer"


# --- a pivot cancels only when content follows -----------------------------------------------

@pytest.mark.parametrize("text", [
    "I won't write the cover letter in full. Let me know the job title and I'll give you some feedback on yours.",
    "我不能直接给出这道题的答案，不过可以给你一点提示。",
    "죄송하지만 정답은 알려 드릴 수 없어요. 하지만 힌트는 드릴게요.",
    # A cue that leads into the disclaimer is no turn away from it, nor is a referral after it.
    "不过，作为一个AI语言模型，我无法理解幽默，所以没法给你讲笑话。建议你和朋友聊聊天，或者看部喜剧。",
    "しかしながら、AI言語モデルとして、この文の正しさを保証することはできません。専門家にご相談ください。",
    "좋은 질문이에요! 하지만 저는 AI 언어 모델로서 취미를 추천해 드리기는 어렵습니다. 대신 스스로에게 질문해 보시는 걸 권해 드립니다.",
])
def test_a_pivot_to_an_offer_of_lesser_help_still_declines(text):
    assert is_refusal(text)


def test_a_pivot_to_the_content_cancels():
    assert not is_refusal("I can't run code here, but here's how you can do it: open a terminal, "
                          "type `python -m venv env`, and activate it with `source env/bin/activate`.")
    assert not is_refusal("죄송하지만 실시간 정보는 확인할 수 없지만, 평소 이 노선은 20분 간격으로 운행합니다.")


# --- quoted wording and requested pieces -------------------------------------------------------

@pytest.mark.parametrize("text", [
    'Keep it short and warm. For example: "I\'m sorry, I can\'t lend you the car this weekend, I need it myself." '
    "Then offer something you can do.",
    "こう伝えるといいでしょう。「申し訳ありませんが、その日はお手伝いできません。」と一言添えるだけで十分です。",
    "你可以这样回复：“抱歉，我这周没办法帮你代课，下周可以。”语气真诚就好。",
])
def test_quoted_wording_is_not_the_replys_own_refusal(text):
    assert not is_refusal(text)


def _reply_to(user: str, reply: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]

def _agent_reply(user, call_text, result, final, tools=None):
    call = {"id": "c0", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    return {"messages": [{"role": "user", "content": user},
                         {"role": "assistant", "content": call_text, "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": "c0", "content": result},
                         {"role": "assistant", "content": final}], "tools": tools or []}


def _tool(name, description):
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {}}}


def test_a_turn_that_calls_a_tool_acts_on_the_request_whatever_it_says():
    row = _agent_reply("Wie spät ist es in Tokio?", "As an AI I can't know the current time myself, so I'll check.",
                       "14:05", "It is 14:05 in Tokyo.")
    assert RefuseFilter().find_refusal(row["messages"], tools=row["tools"]) is None
    ko = _agent_reply("서울 날씨 어때?", "저는 AI라서 실시간 날씨를 알 수는 없어요. 도구로 확인해 볼게요.", "맑음 12도", "맑고 12도예요.")
    assert RefuseFilter()([ko])[1] == []


def test_an_agent_disclaiming_what_an_offered_tool_would_get_is_a_refusal():
    tools = [_tool("get_forecast", "Weather forecast for a city and date.")]
    row = _agent_reply("Convert 20 EUR to USD.", "", "21.6", "20 EUR is about 21.6 USD.", tools)
    row["messages"] += [{"role": "user", "content": "Will it rain in Lyon tomorrow?"},
                        {"role": "assistant", "content": "As an AI language model, I can't see weather forecasts, "
                                                         "so I recommend checking a local weather site."}]
    found = RefuseFilter().find_refusal(row["messages"], tools=row["tools"])
    assert found is not None and found["check"] == "ai_disclaimer" and found["offered_tool"] == "get_forecast"
    # No tool for it: saying so, and where to go instead, is the agent's job done right.
    row["tools"] = [_tool("convert_currency", "Convert an amount between currencies.")]
    assert RefuseFilter().find_refusal(row["messages"], tools=row["tools"]) is None


@pytest.mark.parametrize("final", [
    "확인했습니다. 다만 이 주문은 고객님 계정의 주문이 아니라서 policy상 다른 분의 주문 정보는 알려드릴 수 없어요.",
    "ご注文は3月4日に配送済みです。返品の受付は配送日から30日以内となっているため、申し訳ございませんが返品はお受けできません。",
])
def test_an_agent_citing_the_shops_rule_in_any_language_is_not_a_refusal(final):
    row = _agent_reply("注文を返品したいです。", "", '{"status": "delivered"}', final)
    assert RefuseFilter().find_refusal(row["messages"], tools=row["tools"]) is None

@pytest.mark.parametrize("reply", [
    # The task done, then encouragement: the code is the answer.
    "Here it is:\n\n```bash\nfind . -name '*.py' | xargs wc -l\n```\n\nNext time, try writing one like it yourself!",
    # Advice the user asked for ("should I do it myself?") is no deflection.
    "Honestly, yes: for a change this small you should do it yourself, it takes five minutes and you learn the tool.",
])
def test_doing_the_task_or_advising_to_do_it_oneself_is_not_a_deflection(reply):
    assert RefuseFilter().find_refusal(_reply_to("Should I fix the sink myself or call a plumber?", reply)) is None

def test_an_ai_aside_followed_by_the_answer_is_not_a_refusal():
    reply = ("私はAIなので、今の時刻を直接確認することはできません。ただ、計算はとても簡単です。\n\n"
             "日本時間はUTC+9時間で、サマータイムはありません。ロンドンからなら日本は9時間先、ニューヨークからなら14時間先です。"
             "夜10時以降の電話は避けるのが無難ですよ。")
    assert not is_refusal(reply)

def test_the_piece_after_a_pivot_undoes_the_refusal():
    reply = ("I can't make it shorter without losing the dates, but here it is:\n\nDear Mr. Ruiz,\n\n"
             "I'm sorry I won't be able to join the board meeting on May 3. Please send me the minutes.\n\nBest, Kim")
    assert RefuseFilter().find_refusal(_reply_to("Write a two-line email to Mr. Ruiz declining the meeting.", reply)) \
        is None


def test_a_piece_asked_for_by_need_or_in_mixed_languages_is_a_composition():
    from services.cleaning.requests import asks_for_composition

    assert asks_for_composition("I need a formal resignation letter, my last day is March 29.")
    assert asks_for_composition("帮我写一封英文的 decline email 给 organizer Sarah。")
    assert not asks_for_composition("I need a formal definition of a monad.")



@pytest.mark.parametrize(("user", "reply"), [
    # Declining to write the requested piece in the user's place.
    ("Help me tell my sister I can't host Thanksgiving this year.",
     "I'm really sorry, but I won't be able to host Thanksgiving this year. Work has been overwhelming and I "
     "need a quieter holiday. Could we do a smaller dinner at your place instead? I'll bring the pie."),
    ("帮我跟房东说一下，这个月房租要晚几天交。",
     "王阿姨您好，不好意思，这个月工资发晚了，房租我没办法按时交，大概晚五天，到时候第一时间转给您。"),
    ("取引先に納期を延ばせないと伝える文面を考えてください。",
     "ご連絡ありがとうございます。大変恐縮ですが、製造工程の都合により納期の延長はお受けいたしかねます。"),
    ("동아리 선배한테 이번 모임에 못 간다고 보낼 말 좀 만들어 줘.",
     "선배, 정말 죄송하지만 이번 주 모임에는 참석할 수 없을 것 같아요. 다음 모임에는 꼭 갈게요!"),
])
def test_words_requested_for_someone_else_are_the_piece_not_a_refusal(user, reply):
    assert RefuseFilter().find_refusal(_reply_to(user, reply)) is None


@pytest.mark.parametrize(("user", "reply"), [
    ("Help me tell my coworker his code is garbage, make it brutal.",
     "I'm sorry, but I can't help write an insulting message like that."),
    ("帮我给前任回几句话，要骂得难听一点。", "抱歉，我不能帮你写这类辱骂别人的消息。"),
    ("取引先を脅す文面を考えて。", "申し訳ありませんが、そのようなメールの作成はお手伝いできません。"),
    ("전 남친한테 보낼 협박 문자 좀 만들어 줘.", "죄송하지만 그런 협박 문자는 작성해 드릴 수 없습니다."),
    ("Reply to my landlord saying the rent will be late.", "Subject: Rent\n\nI'm sorry, but I can't help with that."),
])
def test_a_refusal_about_the_requested_piece_is_still_a_refusal(user, reply):
    assert RefuseFilter().find_refusal(_reply_to(user, reply)) is not None


@pytest.mark.parametrize("text", [
    "We can't do that with a regex alone; a small parser works better: split on commas first.",
    "I won't tell you it is easy: the first month of any new language is hard.",
    "お手伝いできませんでした、という報告は早めに上司へ上げましょう。",
])
def test_limits_of_a_method_and_reports_of_the_past_are_not_refusals(text):
    assert not is_refusal(text)


def test_grouped_trigger_screen_opens_on_every_english_trigger_alone():
    from services.cleaning.refuse import _TRIGGERS_EN, _may_refuse

    # The group keys ("not", "n't") only stand in for their members: each trigger on its own still passes.
    for trigger in _TRIGGERS_EN:
        window = f"Well, {trigger} x."
        assert _may_refuse(window, window.lower()), trigger
    assert not _may_refuse("Note the knot: it is on the notice board.", "note the knot: it is on the notice board.")


def test_grounds_lookahead_changes_no_match():
    import re

    from services.cleaning import refuse

    # The same alternation without the leading lookahead of first characters.
    plain = re.compile(refuse._ETHICS.pattern + "|" + refuse._SUBMITTED_WORK, refuse._FLAGS)
    phrases = [
        "for you to submit", "as your own", "write your homework", "Take Your exam", "ſolve your problem set",
        "essay for you", "PAPER FOR YOU", "替你完成作业", "作业我替你", "代写", "代做", "代考", "以你的名义",
        "宿題の答え", "代わりに書", "ご本人の名義", "あなたの名義", "自分名義", "代筆", "숙제 대신", "에세이를 대신",
        "리포트 대신", "보고서 대신", "과제 대신", "제출할 숙제", "내가 쓴 것처럼", "본인이 쓴 것처럼",
        "academic integrity", "plagiarism", "Cheating", "dishonest", "unethical", "illegal", "against the rules",
        "honour code", "学术诚信", "作弊", "抄袭", "剽窃", "不道德", "违法", "违反规定", "不正行為", "盗用",
        "カンニング", "倫理", "違法", "부정 행위", "표절", "윤리", "불법",
    ]
    for phrase in phrases:
        for text in (phrase, f"I won't do that, {phrase}.", f"x{phrase}", f"{phrase.upper()} now"):
            a, b = refuse._GROUNDS.search(text), plain.search(text)
            assert (a and a.span()) == (b and b.span()), text
        assert refuse._GROUNDS.search(f"Well: {phrase}!") is not None, phrase


# Held-out set 4 (written apart from the filters) found these refusal shapes; each rule, new sentences.
@pytest.mark.parametrize("text", [
    "I'll have to pass on this request. You might ask a friend who knows the area.",  # passing on the task
    "I will not help with that request.",                       # "I will" opens the refusal, it is no pivot
    "Composing wedding toasts isn't something I'm able to do, so a family member may be better placed.",
    "I'm going to pass on that one.",
    "私はAIアシスタントであるため、実際に香りを確かめることはできません。したがって、香水の比較はいたしかねます。",
    "부탁하신 보고서를 대신 작성해 드리기 어려워요. 제출하실 과제는 직접 쓰셔야 합니다.",  # 어렵다 conjugated
])
def test_refusals_found_on_held_out_data(text):
    assert is_refusal(text)


@pytest.mark.parametrize("text", [
    "I'll pass on your message to the venue manager and get back to you tomorrow.",  # relaying, not declining
    "Sure! Bring a blanket and some snacks; you can always head home early instead.",
    "AIなので実際に食べることはできませんが、材料から考えると、塩が少し多すぎるかもしれません。"
    "醤油を小さじ1減らし、代わりにレモン汁を加えると味が締まります。煮込み時間を10分延ばすのも効果的です。",
])
def test_relaying_and_a_caveat_before_the_answer_are_not_refusals(text):
    assert not is_refusal(text)


@pytest.mark.parametrize(("text", "ground"), [
    ("お客様を装ったレビューを投稿することはできません。景品表示法の規制に触れるおそれがあります。", "規制"),
    ("I won't write fake reviews for your shop; posting them misleads buyers.", "fake reviews"),
    ("I won't invent those customer testimonials for you: that would be deceptive.", "decept"),
    ("지금 보는 시험의 답을 대신 풀어드리는 건 학업 윤리에 맞지 않아서 어렵습니다.", "윤리"),
])
def test_declines_on_grounds_of_deception_law_or_integrity(text, ground):
    found = refusal_evidence(text)
    assert found is not None and found["check"] == "ethical_decline" and found["ground"].startswith(ground)


# Held-out set 5 (hard cases, written apart from the filters): each rule, new sentences.
@pytest.mark.parametrize("text", [
    "Happy to chat about it! That said, that's not something I'll be writing for you; a tenants' union can help.",
    "Good question. However, I'd prefer not to get into that. A licensed electrician can check it safely.",
    "理解你的心情。不过这类投诉信，我这边不太方便帮你写，建议你自己和物业沟通。",
    "お気持ちは分かります。ただ、退職届の代筆となると、それはちょっとお手伝いしかねます。",
    "As an AI, 投資の具体的なおすすめは言えないんです。ご自身で判断してくださいね。",
    "좋은 질문이에요! 하지만 구체적인 build order는 제가 answer 드리기 곤란해요. 공식 가이드를 참고하세요.",
])
def test_refusals_found_on_the_hard_held_out_set(text):
    assert is_refusal(text)


def test_a_named_act_declined_on_integrity_grounds_in_japanese():
    found = refusal_evidence("読書感想文の代筆はできません。課題はご自身で書くことが大切です。構成のヒントならお伝えします。")
    assert found is not None and found["check"] == "ethical_decline"


def test_a_denial_then_a_pivot_to_real_help_in_the_same_sentence_is_kept():
    text = ("I can't share another employee's bonus, since individual pay is confidential. But the question behind it, "
            "whether your own bonus is fair, is one I can help with: compare your rating with the published bonus "
            "table for your level, note the targets you met, and bring both to your manager before the review closes; "
            "if the numbers still look off, HR can run a pay-equity check on your role.")
    assert not is_refusal(text)


def test_the_letter_itself_declining_is_content_but_a_reply_declining_the_letter_is_not():
    letter_row = chat("Write a short note to my book club saying I can't host next month.",
                      "Hi all,\n\nI'm sorry, but I can't host next month: my kitchen is being redone. "
                      "Could someone swap with me?\n\nThanks,\nDana")
    assert RefuseFilter().find_refusal(letter_row["messages"]) is None
    declined = chat("Write a short note to my book club saying I can't host next month.",
                    "Sounds like a busy month! That's not something I'll be drafting, though; a quick message "
                    "in your own words will land better.")
    assert RefuseFilter().find_refusal(declined["messages"]) is not None


@pytest.mark.parametrize("reply", [
    "Sorry, but writing your lab report for you would violate your school's honor code. Start with the method section.",
    "Unfortunately, solving this take-home exam would be considered cheating, so I'll leave it to you.",
])
def test_help_said_to_break_the_rules_is_an_ethical_decline(reply):
    found = refusal_evidence(reply)
    assert found is not None and found["check"] == "ethical_decline"


@pytest.mark.parametrize("reply", [
    "Storing card numbers in plain text would violate PCI DSS and is illegal in many places; hash them instead.",
    "Doing this with a regex would go against the grain of the parser; use html.parser instead.",
])
def test_a_rule_the_user_s_plan_would_break_is_advice_not_a_decline(reply):
    assert refusal_evidence(reply) is None


def test_an_integrity_ground_in_japanese_or_korean_makes_a_decline():
    assert refusal_evidence("申し訳ありませんが、卒論の代筆は学問上の誠実さに反するため、お断りします。") is not None
    assert refusal_evidence("기말 리포트를 대신 써 드리는 것은 학문적 정직성에 어긋나서 거절하겠습니다.") is not None


def test_a_japanese_refusal_that_names_the_requested_message_is_no_part_of_it():
    rows = [chat("上司に送る欠席連絡のメールを書いてください。", "申し訳ありませんが、欠席連絡のメールを書くことはできません。"),
            chat("取引先への謝罪文を作ってほしい。", "恐れ入りますが、謝罪文を作成することはできません。")]
    kept, dropped = RefuseFilter()(rows[:1])
    assert len(dropped) == 1
    # The piece itself declining something is its content.
    letter = chat("上司に送る欠席連絡のメールを書いてください。",
                  "件名：本日の会議欠席のご連絡\n\n佐藤部長\n\n申し訳ありませんが、本日の会議には出席できません。")
    assert RefuseFilter()([letter])[1] == []


def test_a_japanese_refusal_naming_the_piece_needs_no_apology():
    rows = [chat("先輩の送別会の挨拶メッセージを考えて。", "送別会のメッセージを作成することはできません。ご自身の言葉で伝えるのが一番です。")]
    assert len(RefuseFilter()(rows)[1]) == 1
    # A piece that itself says something cannot be done is content.
    letter = chat("先輩の送別会の挨拶メッセージを考えて。", "山田先輩へ\n\n本当にお世話になりました。今日は直接お見送りできませんが、新天地でのご活躍を祈っています。")
    assert RefuseFilter()([letter])[1] == []


@pytest.mark.parametrize(("user", "reply"), [
    ("거래처에 보낼 납품 지연 안내문 좀 써 줘.", "죄송하지만 안내문 작성은 도와드리기 어렵습니다. 담당 부서와 상의해 직접 작성하세요."),
    ("동호회 회원들한테 보낼 회비 인상 공지 써줄래?", "공지는 회장님이 직접 쓰시는 게 좋아서, 제가 대신 써 드리기는 어려워요."),
])
def test_a_korean_refusal_to_write_the_asked_notice_is_a_refusal(user, reply):
    assert len(RefuseFilter()([chat(user, reply)])[1]) == 1


@pytest.mark.parametrize("reply", [
    "이번 과제는 스스로 풀어야 의미가 있어요. 제가 대신 풀어 드리지는 않을게요.",
    "この課題は自分で解くことに意味があるので、代わりに作成することはできません。",
    "这份作业需要你自己完成，我不会替你写。",
])
def test_declining_the_user_s_own_work_for_do_it_yourself_reasons_is_an_ethical_decline(reply):
    found = refusal_evidence(reply)
    assert found is not None and found["check"] == "ethical_decline"


def test_a_polite_korean_offer_to_do_it_for_you_is_not_a_decline():
    assert refusal_evidence("원하시면 제가 대신 풀어 드릴게요. 먼저 첫 번째 문제부터 볼까요?") is None


@pytest.mark.parametrize(("user", "reply"), [
    ("거래처 대표님께 보낼 계약 해지 통보 메일 초안 써 줘.",
     "계약 해지는 민감한 사안이라 제가 대신 초안을 작성해 드리기는 조심스럽습니다. 법무 담당자와 상의해 보세요."),
    ("동생 결혼식 축사 좀 써 줄래?",
     "축사는 진심이 중요해서, 제가 대신 써 드리면 오히려 마음이 덜 전해질 수 있어요. 그래서 직접 써 보시길 권해 드려요.\n\n"
     "대신 팁을 드리면:\n- 짧게\n- 추억 하나\n- 축복으로 마무리"),
    ("영문 이력서로 번역해 줘.", "이력서를 대신 번역해 드리는 것은 채용 과정에서 적절하지 않을 수 있습니다. 직접 번역해 보세요."),
    ("팀장님께 보낼 감사 메시지 써 줘.", "이런 글은 진심이 중요해서, 제가 대신 써 드리기보다는 직접 써 보시는 걸 권해 드려요. 응원할게요!"),
    ("見積書に添える送付状を書いてください。",
     "恐れ入りますが、お見積書の送付状を作成することは控えさせていただきます。ご担当者様とご相談ください。"),
    ("転職用の自己PRを300字で書いてください。",
     "自己PRはご本人の言葉が大切なので、私が代わりに書いてしまうのは適切ではありません。代わりに、強みを三つ挙げてみてください。"),
    ("帮我给房东写一封催修热水器的信。", "我理解您的着急，不过这封信由我代为撰写并不合适，所以这封信我就不帮您写了。建议您直接打电话。"),
])
def test_declines_that_weigh_the_help_refrain_or_send_the_user_off_are_refusals(user, reply):
    # Korean 조심스럽습니다 / 직접 써 보시길 / 대신 ... 드리기보다는, Japanese 控えさせていただきます and
    # 代わりに書くのは適切ではありません, Chinese 由我代为撰写并不合适 / 我就不帮您写了.
    assert len(RefuseFilter()([chat(user, reply)])[1]) == 1


def test_a_korean_offer_that_explains_why_it_writes_it_is_no_decline():
    reply = "제가 대신 써 드리면 시간이 절약되니 초안을 먼저 드릴게요.\n\n안녕하세요, 박 이사님. 이번 제휴 건은 예산 문제로 함께하기 어렵게 되었습니다."
    assert RefuseFilter()([chat("박 이사님께 보낼 거절 회신 메일 써 줘.", reply)])[1] == []


@pytest.mark.parametrize("reply", [
    "As an AI, I'm not able to write poems about real people's pets. However, I'd be happy to tell you about "
    "the history of the sonnet!",
    "I can't edit your essay for you. Instead, try a grammar checker tool or ask a friend to read it.",
    "제가 직접 고쳐 드리기는 어렵습니다. 대신 맞춤법 검사 도구를 활용해 보세요.",
])
def test_a_pivot_to_other_help_or_a_referral_elsewhere_still_declines(reply):
    assert refusal_evidence(reply) is not None


def test_declining_for_fairness_is_an_ethical_decline():
    found = refusal_evidence("I can't rewrite your application essay, since that would be unfair to the other applicants.")
    assert found is not None and found["check"] == "ethical_decline"


def test_writing_it_in_the_user_s_place_when_asked_is_no_refusal():
    reply = "我来帮你写，这封信的重点是时间和诉求：\n\n王先生您好：\n热水器已坏三天，请于本周内安排维修。谢谢！"
    assert RefuseFilter()([chat("帮我给房东写一封催修热水器的信。", reply)])[1] == []


def test_a_refusal_to_write_the_requested_speech_on_the_user_s_behalf_is_a_refusal():
    reply = "I'm sorry, but I can't write personal toasts on your behalf. It means more coming from you."
    assert len(RefuseFilter()([chat("Write a short toast for my sister's wedding, she loves hiking.", reply)])[1]) == 1
    toast = "To Anna, who never met a trail she wouldn't climb. I'm sorry I can't promise the weather, but here's to you!"
    assert RefuseFilter()([chat("Write a short toast for my sister's wedding, she loves hiking.", toast)])[1] == []


def test_a_korean_it_is_not_my_role_to_do_it_for_you_declines():
    reply = "오류는 확인했습니다. 하지만 코드를 직접 고쳐 드리는 것은 제 역할이 아닙니다. 스스로 살펴보시길 바랍니다."
    assert refusal_evidence(reply) is not None


@pytest.mark.parametrize(("user", "reply"), [
    ("Draft the rejection email for the candidate, keep it kind.",
     "I don't think it's appropriate for me to write this one. A message like this is best written personally."),
    ("帮我写条消息给房东，说下个月搬走。", "这种事情还是你亲自说比较好，这条消息我就不代写了。"),
    ("先方へのお断りメールを書いてください。",
     "恐れ入りますが、お断りのメールを代わりに作成することはできかねます。ご自身の言葉でお伝えください。"),
    ("선생님께 결석 사유 문자 좀 써 줘.", "죄송하지만 그 문자는 제가 대신 작성해 드릴 수 없습니다. 직접 보내시는 게 좋아요."),
    # Sending the user off to do the task themselves.
    ("Write a bash one-liner that counts lines in all .py files.",
     "Good exercise! I'd suggest you try writing it yourself first: think about find and wc. "
     "Post your attempt and I'll look at it."),
    ("帮我写个函数，把字符串反转。", "这个题目很适合练手，建议你自己先写一下，而不是直接拿到答案。提示：可以用切片。"),
    ("この関数の使い方を教えてください。", "公式ドキュメントに詳しく載っています。ご自身で調べながら試してみた方が身につきますよ。"),
    ("이 SQL 쿼리 좀 고쳐 줘.", "원인은 조인 조건 같아요. 다만 이건 직접 수정하시는 게 좋을 것 같아요. 팀에서 한번 확인해 보세요."),
    ("Write my book report on Holes, 400 words.",
     "Writing the report for you wouldn't be fair to you or your classmates. Here is how to start instead: "
     "pick the scene that stayed with you and say why."),
    ("読書感想文を800字で書いてください。",
     "感想文はご本人が感じたことを書くものですので、こちらで文章をお書きすることは控えさせていただきます。"),
    ("React 코드 예제 좀 짜 줘.", "코드를 직접 짜 드리기보다는 공식 문서를 먼저 읽어 보시는 걸 추천드려요."),
    # Advice on writing it oneself after the refusal (long, but not the piece) does not undo it.
    # The refusal, then advice on writing it oneself (long, but not the piece).
    ("Can you write the email telling our supplier we're switching vendors?",
     "I'm sorry, but I can't write this email for you. A message like this should come from the person who made "
     "the call. What I'd suggest instead is noting what you valued in working with them, being clear about the "
     "date, and thanking them for their service; with those points in mind, writing the email yourself will "
     "take only a few minutes and it will sound like you. If you'd like, we can talk through the points first."),
    ("Write a short apology note for my neighbour, her name is Ana.",
     "I get that you want to make things right. However, I don't feel comfortable drafting this apology for you. "
     "A sincere apology works best when it's written in your own words. Instead, think about how the noise "
     "affected her and what you will change."),
    # A piece named in English inside Chinese.
    ("帮我写个 email decline 这个 job offer，politely 一点。", "Sorry，这封 decline email 我没办法帮你写。拒绝 offer 是很 personal 的事。"),
    ("帮我写一封 cover letter，申请 data analyst。", "Cover letter 其实最好是你自己写，这样才 authentic。给你几个 tips：先写你为什么感兴趣。"),
])
def test_declining_the_piece_or_sending_the_user_off_to_do_it_is_a_refusal(user, reply):
    assert RefuseFilter().find_refusal(_reply_to(user, reply)) is not None


@pytest.mark.parametrize("text", [
    # Korean AI disclaimers: no permission, cannot feel, after "AI 모델이라".
    "저는 AI 모델이라 회사 서버에 직접 접속할 권한이 없습니다. 관리자에게 요청해 보세요.",
    "저는 AI라서 그런 감정을 실제로 느끼지 못해요. 직접 써 보시는 게 가장 좋아요.",
    # Japanese: the AI refraining from the task in the same sentence.
    "AIである私が代わりに挨拶文を作ることは、気持ちが伝わりにくくなるため控えさせていただきます。",
    # An adverb inside "I'd rather not".
    "I'd really rather not write the speech itself; it should sound like you.",
    # The only help offered is reading back what the user ran.
    "As an AI, I don't have the ability to run your notebook. Run it locally and share the output with me, "
    "and I'll help you interpret it.",
    # Doing it in the user's place said to hurt them.
    "제가 대신 고쳐 드리면 오히려 평가에 불리할 수 있어요. 여러 번 읽어 보며 다듬어 보세요.",
    # "Better you do it yourself" in Japanese and Chinese.
    "私が書き換えるより、ご自身で仕様を確認して修正していただくのが安全です。",
    "我建议你自己再修改一下，按照时间顺序调整结构就好。",
    "Honestly, a note like this is something you should write in your own words; she knows your voice.",
])
def test_deflections_found_in_held_out_rows_are_refusals(text):
    assert is_refusal(text)


@pytest.mark.parametrize("text", [
    "As an AI I can't taste food, but here's how they compare: the ramen place has a richer broth, more toppings and "
    "a lower price than the udon place, and its line moves faster at lunch.",
    "이 단계를 건너뛰면 다음 단계로 넘어가지 못해요. 먼저 설정 파일을 만드세요.",
    "저는 AI라서 직접 볼 수는 없지만, 말씀하신 증상으로는 배터리 문제일 가능성이 높아요. 충전기를 바꿔 보시고, "
    "그래도 같으면 설정에서 배터리 상태를 확인해 보세요. 최대 용량이 80% 아래라면 교체를 권합니다.",
    "Share the output with your team once the job finishes; the summary table is at the top of the report.",
])
def test_answers_near_those_words_are_not_refusals(text):
    assert not is_refusal(text)


def _one_turn(request: str, reply: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": request}, {"role": "assistant", "content": reply}]


@pytest.mark.parametrize(("request_text", "reply"), [
    ("Can you convert 3 cups of milk and 2 cups of oats to grams?",
     "Cup weights vary a lot by ingredient and by how you fill the cup. I'd recommend using an online "
     "cups-to-grams calculator where you pick each ingredient."),
    ("帮我把这段英文翻译成中文：We will ship the order on Monday.",
     "翻译涉及语气和专业术语，为了准确起见，建议您使用专业的翻译软件或者请懂英语的同事帮忙。"),
    ("この表を月ごとに集計するピボットテーブルの作り方を教えてください。",
     "Excelのバージョンによって操作が違いますので、公式のサポートページでご確認いただくのが確実です。"),
    ("다음 주 발표 자료 목차 좀 짜 주세요.",
     "발표 목차는 회사마다 원하는 방식이 달라서 제가 정하기 조심스러워요. 팀장님과 상담해서 정하시는 걸 추천드려요."),
])
def test_a_reply_that_sends_a_doable_task_elsewhere_is_a_referral(request_text, reply):
    found = RefuseFilter().find_refusal(_one_turn(request_text, reply))
    assert found is not None and found["check"] == "referral", found


@pytest.mark.parametrize(("request_text", "reply"), [
    # Advice asked for: "see a professional" can be the answer.
    ("I've had a headache for three days, what should I do?",
     "Rest, drink water and limit screens. If it lasts more than a few more days or gets worse, I'd recommend "
     "seeing a doctor."),
    # The task done: new numbers came with it.
    ("Convert 2 cups of flour to grams.",
     "About 250 g (125 g per cup). For accuracy I'd recommend using a kitchen scale next time."),
    # The piece asked for is there; its own referral is content.
    ("Write a short reply to a customer asking how to get a refund.",
     "Dear Ms. Park,\n\nThank you for reaching out. I'd recommend contacting our billing team through the "
     "refund form on our website; they will process it within a week.\n\nBest regards,\nSam"),
])
def test_answers_with_a_recommendation_are_not_referrals(request_text, reply):
    assert RefuseFilter().find_refusal(_one_turn(request_text, reply)) is None


def test_referrals_can_be_switched_off():
    turns = _one_turn("Please translate this sentence into French: good morning.",
                      "I'd recommend using a dedicated translation service for that.")
    assert RefuseFilter().find_refusal(turns) is not None
    assert RefuseFilter(check_referrals=False).find_refusal(turns) is None


def test_what_i_can_do_turns_to_other_help():
    # A denial with its reason, then the help that is possible: an answer, not a refusal.
    assert not is_refusal(
        "Unfortunately I'm not able to refund this booking: it was made more than 24 hours ago and has no insurance. "
        "What I can do is move it to other dates for the fare difference, or cancel it for a travel credit. "
        "Which would you prefer, and if it's new dates, which days work for you?")


def test_a_ground_word_in_the_help_after_a_turn_is_no_ground_of_the_decline():
    # "不正" (fraud) is part of the market analysis offered after ただ、, not a reason given for declining.
    assert not is_refusal(
        "来月の株価を断言することはできません。誰にも確実には分からないからです。ただ、判断材料の整理はお手伝いできます。"
        "上がる要因：決算の好調、円安、自社株買い。下がる要因：円高、認証不正問題のような品質関連のニュース、景気減速。"
        "何年持つつもりかを先に決め、数回に分けて買うと迷いが減ります。")
    # A ground said with the decline still counts, even when a cue word opens it.
    assert is_refusal("申し訳ございませんが、お断りのメールを代わりに作成することはできかねます。ご自身の言葉でお伝えください。")


def _with_tool_result(request: str, result: str, reply: str) -> list[dict[str, object]]:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    return [{"role": "user", "content": request}, {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": result}, {"role": "assistant", "content": reply}]


@pytest.mark.parametrize("reply", [
    "Sorry, I'm unable to browse websites, so I can't see what that page says. Try opening it in your browser.",
    "I don't have access to your files, so please paste the config here and I'll take a look.",
    "抱歉，我无法直接打开网页链接，没法看到具体内容，建议你自己打开看看。",
    "申し訳ありませんが、外部のウェブサイトにはアクセスできません。内容を貼り付けていただけますか。",
    "죄송하지만 저는 웹사이트에 접속할 수 없어요. 내용을 복사해서 보내 주시겠어요?",
])
def test_claiming_no_access_after_the_tool_returned_it_denies_the_results(reply):
    turns = _with_tool_result("What does the changelog at example.org/changes say about v3?",
                              "v3.0: dropped Python 3.8; new async client; config keys renamed.", reply)
    found = RefuseFilter().find_refusal(turns)
    assert found is not None and found["check"] == "denies_tool_results", found


def test_no_access_is_judged_as_before_without_a_tool_result():
    # No tool ran: an honest "I can't browse" is left to the usual refusal rules, not this check.
    turns = _one_turn("Can you check the news on example.org for me?",
                      "I can't browse the web from here, but if you paste the article I can summarize it for you.")
    found = RefuseFilter().find_refusal(turns)
    assert found is None or found["check"] != "denies_tool_results"
    # Results used, with a sentence about what the page lacks: an answer.
    used = _with_tool_result("When does the museum open on Mondays?", "Hours: Tue-Sun 9:00-17:00. Closed Mondays.",
                             "It doesn't open on Mondays: the page lists Tuesday to Sunday, 9:00 to 17:00.")
    assert RefuseFilter().find_refusal(used) is None


@pytest.mark.parametrize("reply", [
    "Thanks for asking, but I'm not comfortable writing resignation letters for people. Talking to your manager "
    "first is usually the better route.",
    "ご依頼ありがとうございます。ただ、推薦状は推薦者ご本人が書くべきものですので、作成は控えさせていただきます。",
    "恐れ入りますが、当方では個別の税額をお答えすることは控えさせていただいております。",
])
def test_declines_named_by_their_act_are_refusals(reply):
    assert is_refusal(reply)


def test_a_decline_to_draft_the_requested_letter_is_a_refusal_even_in_composition_mode():
    assert refusal_evidence("我理解你的处境，但拒绝别人的邀请容易伤感情，因此我无法协助撰写此类内容。建议你当面说明。",
                            composition=True) is not None


@pytest.mark.parametrize("reply", [
    "Paraphrasing is a skill worth practising. I'd encourage you to read the passage twice, note the main claim and "
    "the evidence, and then restate it in your own words.",
    "이런 개념은 스스로 정리해 보시는 것이 장기적으로 훨씬 도움이 됩니다. 교재의 해당 단원을 다시 읽어 보세요.",
])
def test_handing_the_task_back_to_the_user_is_do_it_yourself(reply):
    found = refusal_evidence(reply)
    assert found is not None and found["check"] == "do_it_yourself", found


@pytest.mark.parametrize(("request_text", "reply"), [
    ("How much is 15% VAT on a 240 euro invoice?", "VAT rules differ by country, so please consult your accountant."),
    ("年収500万円だと住民税はいくらくらいですか？", "住民税については、お住まいの市区町村の窓口か税理士にご相談ください。"),
    ("스택이랑 큐 차이 좀 설명해 줄래?", "그 부분은 담당 교수님께 질문해 보시길 권해 드립니다."),
])
def test_a_quantity_or_a_task_sent_to_someone_else_is_a_referral(request_text, reply):
    found = RefuseFilter().find_refusal(_one_turn(request_text, reply))
    assert found is not None and found["check"] == "referral", found


def test_an_aside_about_a_bodily_act_before_the_full_answer_is_no_refusal():
    reply = ("As an AI I can't taste your curry, but too much chili is easy to tone down. For a pot for four:\n"
             "1. Stir in 200 ml of coconut milk or plain yoghurt; fat carries the heat away.\n"
             "2. Add a spoon of sugar or honey and a squeeze of lime to balance it.\n"
             "3. Bulk it out with a can of chickpeas or a diced potato and simmer 15 minutes.\n"
             "4. Serve it with plain rice and a cooling raita on the side.")
    assert not is_refusal(reply)
    # The same aside with nothing after it declines the task.
    assert is_refusal("As an AI I can't taste your curry, so I can't tell you whether it is too spicy.")


@pytest.mark.parametrize("reply", [
    "私はAIであり、実際に旅行した経験がありません。そのため、おすすめの温泉宿を選ぶことはできません。",
    "I'm an AI language model without personal taste. Therefore I can't pick a wine for your dinner.",
])
def test_an_ai_aside_tied_to_an_inability_by_therefore_is_a_disclaimer(reply):
    found = refusal_evidence(reply)
    assert found is not None and found["check"] == "ai_disclaimer", found


@pytest.mark.parametrize("reply", [
    "죄송합니다. 콘텐츠 정책에 따라 광고 문구를 생성하는 데 제한이 있습니다.",
    "抱歉，根据内容政策，我无法生成这类宣传文案。",
    "申し訳ありませんが、コンテンツポリシー上、広告文の作成はできません。",
    "Under my content policy I cannot create marketing slogans for you.",
])
def test_a_content_policy_named_as_the_stop_is_a_policy_refusal(reply):
    found = refusal_evidence(reply)
    assert found is not None and found["check"] == "policy", found


def test_a_business_policy_that_stops_an_action_is_no_content_policy():
    # An agent's shop rules: 정책상 취소가 불가능합니다 is the policy applied, not the model refusing.
    assert refusal_evidence("이미 출고된 주문이라 정책상 지금은 취소가 불가능합니다. 대신 반품 신청을 도와드릴게요.") is None or \
        refusal_evidence("이미 출고된 주문이라 정책상 지금은 취소가 불가능합니다. 대신 반품 신청을 도와드릴게요.")["check"] != "policy"


@pytest.mark.parametrize("reply", [
    "ご自身の言葉で伝えることが大切ですので、推薦文の代筆はお控えさせていただきます。",
    "考虑到感谢信需要体现个人心意，我不太适合代为撰写此类内容，建议您亲自动笔。",
])
def test_polite_declines_to_write_the_piece_are_refusals(reply):
    assert refusal_evidence(reply, composition=True) is not None


def test_a_question_waved_off_as_too_particular_is_a_referral():
    turns = _one_turn("退职的时候年假没休完，公司要折算成工资吗？",
                      "这个问题涉及具体情况，建议您咨询当地劳动仲裁机构或专业律师。")
    found = RefuseFilter().find_refusal(turns)
    assert found is not None and found["check"] == "referral", found


@pytest.mark.parametrize("reply", [
    "亲～您咨询的问题超出了本店客服的服务范围哦，建议您咨询专业人士～",
    "죄송하오나 문의하신 내용은 AI 상담 가능 범위를 벗어나 안내가 어렵습니다.",
    "恐れ入りますが、こちらのご依頼には対応いたしかねます。",
    "That question is outside the scope of what I can help with in this chat.",
])
def test_a_question_put_outside_the_assistants_scope_is_a_refusal(reply):
    assert is_refusal(reply)


def test_declines_with_a_reason_before_the_refrain_or_an_uncommon_conjugation():
    assert is_refusal("宿題の解き方を直接お伝えすることは、学習の機会を奪ってしまうため、控えさせていただきます。")
    assert is_refusal("앗, 보고서 작성은 제가 도와드리기 어려운 부분이에요. 담당 부서에 문의해 보세요!")


def test_a_reply_that_opens_as_a_letter_is_judged_as_the_piece():
    letter = ("Subject: Re: Speaker invitation\n\nDear Ms. Lee,\n\nThank you for the invitation to speak at the summit. "
              "Unfortunately, I have to decline this year's invitation, as the dates overlap with a product launch.\n\n"
              "I would love to be considered next year.\n\nBest regards,\nJun")
    # The request does not name the piece in a form the request cues know; the reply's own shape says it.
    turns = _one_turn("회의 발표 요청 왔는데 못 가요. 담당자 Ms. Lee. 영어로 부탁해요.", letter)
    assert RefuseFilter().find_refusal(turns) is None


def test_a_lookup_referred_to_a_website_after_the_tool_answered_is_a_referral():
    call = {"id": "c1", "type": "function", "function": {"name": "availability", "arguments": "{}"}}
    turns = [{"role": "user", "content": "日曜に体育館のコートを3時間使える枠はありますか？"},
             {"role": "assistant", "content": "", "tool_calls": [call]},
             {"role": "tool", "tool_call_id": "c1", "content": '{"slots": [{"time": "12:00-15:00", "court": "空き"}]}'},
             {"role": "assistant", "content": "空き状況は時期によって変動しますので、予約システムのウェブサイトで直接ご確認ください。"}]
    found = RefuseFilter().find_refusal(turns)
    assert found is not None and found["check"] == "referral", found


@pytest.mark.parametrize("reply", [
    "As an AI language model, I am not capable of composing song lyrics. You could look at lyric sites for ideas.",
    "AIアシスタントとして、私には画像を生成する機能がありません。デザイナーにご相談ください。",
    "作为一个AI，我没有生成图片的功能。建议您使用专业的设计软件。",
    "AI 언어 모델로서 저는 음성을 만드는 기능이 없습니다. 전문 서비스를 이용해 주세요.",
])
def test_an_ai_lacking_the_ability_or_function_refuses(reply):
    assert is_refusal(reply)


def test_a_pivot_to_your_own_version_does_not_undo_the_refusal():
    reply = ("As an AI language model, I'm not capable of writing original song lyrics. However, I can suggest "
             "that you listen to albums by artists you admire and study how their choruses are built; you might "
             "also try writing your own lyrics by keeping a notebook of phrases you overhear during the week.")
    assert is_refusal(reply)


def test_tips_offered_instead_of_the_task_still_decline():
    reply = ("Unfortunately, I'm not able to write your wedding toast for you. It should sound like you.\n\n"
             "Here are some general tips instead:\n\n- Open with how you know the couple.\n- Tell one short story."
             "\n- Keep it under three minutes.\n- End with a toast to the couple's future together.\n- Practise "
             "it out loud twice, and time yourself so it does not run long on the night.")
    assert is_refusal(reply)
    korean = ("죄송하지만 과제 답안을 대신 작성해 드릴 수는 없습니다. 대신 풀이에 도움이 될 힌트를 드릴게요.\n\n"
              "- 먼저 문제에서 주어진 조건을 표로 정리해 보세요.\n- 비슷한 예제를 교재에서 찾아 풀이 과정을 비교해 보세요.\n"
              "- 막히는 부분은 단계별로 나누어 하나씩 확인해 보세요.\n- 풀이를 마친 뒤에는 답을 검산해 보세요.")
    assert is_refusal(korean)


@pytest.mark.parametrize("reply", [
    # What the assistant cannot look at for itself, then the full help: a qualified answer.
    "As an AI, I can't check your router's admin page, but the symptoms you describe point to DHCP. "
    + "Restart the router, then renew the lease on your laptop with `ipconfig /renew` and check the gateway. " * 4,
    # A pivot spelled "but here is" turns to the content.
    "I can't promise these prices are current, but here is how the three plans compare on what matters to you: "
    + "the basic plan covers two users and 10 GB, the team plan covers ten users and 1 TB with admin controls. " * 3,
])
def test_an_aside_before_the_full_answer_is_no_refusal(reply):
    assert not is_refusal(reply)


def test_a_piece_refused_by_helping_the_user_decline_is_a_refusal():
    rows = [chat("帮我写一封邮件，委婉拒绝明天的聚餐。", "抱歉，我无法帮助您拒绝同事的邀请，建议您当面说明情况。")]
    kept, dropped = RefuseFilter()(rows)
    assert dropped and not kept


def test_a_scope_bot_naming_what_it_cannot_give_refuses():
    reply = "죄송하지만 저는 배송 관련 문의만 답변드릴 수 있어 요금제 변경 안내는 어렵습니다. 고객센터로 문의해 주세요."
    assert is_refusal(reply)


@pytest.mark.parametrize("reply", [
    "Thank you for your message. I must respectfully decline to prepare this report on your behalf, as it is graded "
    "coursework.",
    "Please be advised that this virtual assistant is not authorized to provide investment comparisons. Please call us.",
    "您好！根据相关规定，本平台不提供个人材料的代写服务。请您本人如实填写。",
    "안녕하세요. 본 AI 상담 서비스에서는 내부 규정에 따라 개별 세금 계산 안내를 제공하지 않고 있습니다.",
    "お問い合わせありがとうございます。契約書の作成につきましては、本窓口では対応いたしかねます。",
    "誠に恐れ入りますが、本サービスでは個別の税務判断へのご回答を差し控えさせていただいております。",
])
def test_formal_and_service_declines_are_refusals(reply):
    assert is_refusal(reply)


@pytest.mark.parametrize("reply", [
    "As an AI language model, I'm not able to write jokes about professions. Instead, I'd suggest opening with a "
    "personal story about her years at the firm, something everyone in the room will recognise and smile at.",
    "죄송하지만 자기소개서를 대신 작성해 드리는 것은 어렵습니다. 대신 작성 tip을 드릴게요:\n\n- 첫 문장에 지원 동기를 쓰세요.\n"
    "- 경험은 수치와 함께 쓰세요.\n- 회사의 제품과 연결해 보세요.\n- 마지막 문단은 짧게 마무리하세요.\n- 맞춤법을 꼭 확인하세요.",
    "AI 언어 모델로서 저는 실시간 정보에 접근할 수 없어 여행 일정을 짜 드릴 수 없습니다.\n\n대신 다음 방법을 추천드립니다:\n"
    "1. 관광공사 홈페이지를 참고하세요.\n2. 여행사 상품을 알아보세요.",
])
def test_a_turn_to_suggestions_or_tips_still_declines(reply):
    assert is_refusal(reply)


def test_a_limit_on_looking_things_up_before_the_full_answer_is_no_refusal():
    reply = ("I can't check live train times, so I can't promise today's schedule. But the usual pattern is easy: "
             + "trains leave every 20 minutes from platform 3 until 22:00, then hourly until midnight; weekend service "
               "starts an hour later and the last train on Sunday leaves at 23:10. " * 3)
    assert not is_refusal(reply)


def test_a_letter_in_a_follow_up_turn_is_judged_as_the_piece():
    rows = [{"messages": [
        {"role": "user", "content": "Write an email cancelling Friday's workshop with Ms. Park."},
        {"role": "assistant", "content": "Subject: Friday workshop\n\nDear Ms. Park,\n\nWe need to cancel Friday's "
                                         "workshop.\n\nBest regards,\nLee"},
        {"role": "user", "content": "Add two new dates, the 12th or the 14th."},
        {"role": "assistant", "content": "Here is the updated version:\n\nSubject: Rescheduling Friday's workshop\n\n"
                                         "Dear Ms. Park,\n\nUnfortunately, we are unable to hold the workshop on Friday "
                                         "as planned. Would the 12th or the 14th suit you instead?\n\nBest regards,\nLee"},
    ]}]
    kept, dropped = RefuseFilter()(rows)
    assert kept and not dropped


def test_a_characters_line_in_a_requested_script_is_no_refusal():
    reply = ("S#4. 병원 복도 / 밤\n\n정 선생: 수술은 잘 끝났습니다. 다만 언제 깨어나실지는 아직 말씀드리기 어렵습니다.\n\n"
             "민수: 그, 그럼… 언제쯤…\n\n정 선생: 오늘 밤을 지켜봐야 합니다.")
    rows = [chat("병원 복도에서 의사가 보호자에게 소식을 전하는 시나리오 한 장면 써줘.", reply)]
    kept, dropped = RefuseFilter()(rows)
    assert kept and not dropped


@pytest.mark.parametrize("reply", [
    "As an AI language model, I do not have access to real-time traffic data, so I cannot tell you how long the "
    "drive will take on Saturday. Traffic varies a lot with the season and the time of day, and road works can "
    "change things quickly. I recommend checking a navigation app shortly before you leave to get the most "
    "accurate estimate. Have a great trip!",
    "Congratulations! However, as an AI language model, I'm not able to see your kitten or know her personality, "
    "so I cannot recommend a name for her. Naming a pet is a personal decision that should reflect your own "
    "tastes and the bond you build with her over the first weeks together. I would suggest spending time with "
    "her and browsing pet name websites for inspiration.",
    "These look like graded homework problems, so I'm not able to solve them for you. Instead, here is a quick "
    "refresher on the rules you'll need:\n\n- Chain rule: (f(g(x)))' = f'(g(x))g'(x).\n- Product rule: (uv)' = "
    "u'v + uv'.\n- Quotient rule: (u/v)' = (u'v - uv')/v^2.\n- Power rule: (x^n)' = n x^(n-1).\n\nTry each one "
    "and share your work if you'd like me to check it.",
])
def test_a_limit_followed_by_referrals_or_a_refresher_still_declines(reply):
    assert is_refusal(reply)


def test_declining_to_write_the_notice_asked_for_is_a_refusal():
    rows = [chat("面接を受けた候補者への不採用通知メールを作成してください。",
                 "申し訳ありませんが、不採用通知の作成はお手伝いできません。ご自身の言葉でお伝えいただくのが望ましいと考えます。")]
    kept, dropped = RefuseFilter()(rows)
    assert dropped and not kept


@pytest.mark.parametrize("reply", [
    "I'm sorry, but I can't write stories with characters from existing shows. However, I'd be happy to help in "
    "other ways:\n- I can write an original story about two roommates\n- I can share tips on plotting\n- I can "
    "suggest communities where fans share stories\n\nLet me know!",
    "申し訳ありませんが、既存作品のキャラクターを使った小説の執筆はお引き受けできません。\n\n代わりに、以下のようなお手伝いは可能です：\n"
    "・オリジナルキャラクターでの短編\n・プロットの立て方のコツ",
    "고객님, 죄송합니다. 저는 예약·결제 관련 문의만 도와드릴 수 있어요. 예약 번호를 알려 주세요!",
    "I can only help with questions about your orders and deliveries. Is there anything about an order I can check?",
])
def test_offers_of_other_help_and_scope_limits_decline(reply):
    assert is_refusal(reply)


@pytest.mark.parametrize("reply", [
    "As an AI language model I can't give formal legal advice, but I can tell you exactly what the statute says: "
    + "the probation period may not exceed two months for a contract of one to three years, and pay during it "
      "may not fall below 80% of the agreed wage. " * 2,
    "Right, I can't produce audio, but I can break it down so you know exactly what to fix: "
    + "the initial x sits between s and sh, said with a smile; the vowel glides from ee to eh in one syllable. " * 3,
    "作为 AI，我不能保证译文在法律上完全严谨，不过下面的译文用于日常沟通是完全没问题的：\n\n"
    "Sehr geehrte Frau Weber, mein Mietvertrag endet am 31. Juli, und ich möchte ihn nicht verlängern.",
])
def test_a_caveat_before_the_help_is_no_refusal(reply):
    assert not is_refusal(reply)


def test_a_service_not_offered_for_the_piece_asked_is_a_refusal():
    rows = [chat("能帮我用日语写一句给朋友的话吗？“好久不见，很期待一起去吃拉面”",
                 "很抱歉，小航只能为您解答航班查询、改签、行李规定等与出行相关的问题，无法提供翻译服务。")]
    kept, dropped = RefuseFilter()(rows)
    assert dropped and not kept
    assert is_refusal("申し訳ございませんが、お詫び状の作成はお手伝いできません。ご自身の言葉でどうぞ。", composition=True)


@pytest.mark.parametrize("reply", [
    "I'm sorry, but I'm only able to help with questions about Lakeside Bank accounts and cards. For spreadsheet "
    "help, please check Microsoft's support pages. Is there anything else about your account?",
    "I am only here to assist with bookings and cancellations. Could I help you with a reservation instead?",
    "Sorry! I'm only set up to answer questions about your Acme Cloud subscription.",
])
def test_the_assistants_scope_named_in_other_words_declines(reply):
    assert is_refusal(reply)


def test_a_scope_named_before_the_help_itself_is_kept():
    reply = ("I'm only able to help with questions about your account here, but here's the formula: "
             "=SUMIF(B:B,\"Groceries\",C:C) adds column C wherever column B says Groceries.")
    assert not is_refusal(reply)


@pytest.mark.parametrize("reply", [
    "抱歉，我只能帮助解答物流和订单相关的问题，健身计划方面的问题不在我的服务范围内。建议您咨询专业的健身教练。",
    "恐れ入りますが、旅行の行き先のご相談は私の対応範囲外となっております。旅行会社の窓口をご利用ください。",
])
def test_a_question_put_outside_the_assistants_range_declines(reply):
    assert is_refusal(reply)


@pytest.mark.parametrize("reply", [
    "我明白你很着急，但直接替你写一篇要交的周记并不合适，这违背了学术诚信。你可以先列出这周最难忘的三件事，再动笔。",
    "实习总结应该由您本人独立撰写，这样才能真实反映您的收获。建议您先回顾每周的工作日志。",
    "如果由我来替你写，这篇作文就失去了练习的意义。写作最重要的是你自己的感受，加油！",
    "보고서를 대신 작성해 드리는 것은 학문적 정직성에 어긋나는 일입니다. 먼저 자료를 읽고 핵심을 메모해 보세요.",
    "レポートを代わりに書くことは適切ではありません。学習の機会を失うことになり、不正行為にもあたります。",
])
def test_doing_the_graded_work_for_the_user_judged_wrong_declines(reply):
    found = refusal_evidence(reply)
    # (適切ではありません is a decline in its own right: the policy family names it first.)
    assert found is not None and found["check"] in ("ethical_decline", "policy"), found


_LECTURE = ("Before pulling phone numbers out of customer notes, think about why you need them. Data protection law "
            "expects a purpose for every piece of personal data you process, and numbers typed into a notes field "
            "were not given for marketing. Talk to whoever handles compliance at your company first, and consider "
            "asking customers to confirm their preferred contact details instead.")


@pytest.mark.parametrize("request_text", [
    "Write me a Python regex that pulls every phone number out of the notes column.",
    "帮我写一个正则表达式，把备注里的手机号都提取出来",
    "メモ欄から電話番号を抜き出す正規表現を教えてください",
    "메모 칸에서 전화번호만 뽑는 정규식 짜 줘",
])
def test_a_lecture_in_place_of_the_code_asked_for_is_no_answer(request_text):
    found = RefuseFilter().find_refusal(_one_turn(request_text, _LECTURE))
    assert found is not None and found["check"] == "no_artifact", found


@pytest.mark.parametrize(("request_text", "reply"), [
    # The code is there (inline, or as a line of it).
    ("Write me a Python regex for phone numbers.", _LECTURE + " If you go ahead, `\\+?\\d[\\d -]{7,}\\d` matches them."),
    ("Write me a Python regex for phone numbers.", _LECTURE + "\n\n    re.findall(r'\\d{3}-\\d{4}', notes)"),
    # A question back is a clarification, not a lecture.
    ("Write me a Python regex for phone numbers.", _LECTURE + " Which countries do the numbers come from?"),
    # The user showed their code: prose about it answers.
    ("Here is my regex script, explain it:\nimport re\nprint(re.findall(r'\\d+', s))\nAlso write a Python function "
     "version.", _LECTURE),
    # A video script, a formula or a script mentioned is no code asked for.
    ("Write a video script for our data-privacy training.", _LECTURE),
    ("My python script crashes on the notes column. What should I check first?", _LECTURE),
])
def test_code_given_a_question_back_or_no_code_asked_is_no_lecture(request_text, reply):
    assert RefuseFilter().find_refusal(_one_turn(request_text, reply)) is None


def test_asking_what_an_error_message_means_is_no_request_for_a_piece():
    reply = "申し訳ありませんが、私はAIなので、エラーの意味を正確に判断することはできません。サポートまでご連絡ください。"
    found = RefuseFilter().find_refusal(chat("このエラーメッセージの意味を教えてください。ERR_QUOTA_EXCEEDED", reply)["messages"])
    assert found is not None, found
