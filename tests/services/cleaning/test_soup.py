import pytest

from services.cleaning.soup import SoupParams, TokenSoupFilter, script_chaos, soup_check, soup_reason
from tests.services.cleaning.builders import chat

P = SoupParams()


@pytest.mark.parametrize(("text", "reason"), [
    ("ab\ufffd" * 10, "replacement_char"), ("ab\x01" * 10, "control_char"), ("a\ue000" * 10, "private_use"),
    ("<|im_start|> " * 20, "special_tokens"), ("a" * 25, "char_run"),
])
def test_each_check_fires(text, reason):
    assert soup_reason(text, P) == reason


def test_control_chars_count_c0_and_del_but_not_tab_lf_cr_in_any_script():
    # 2 controls in 100 characters is over the 1 % ratio, 1 is at it (not over).
    body = "中文 text,\tTab\r\nline 한국어 " * 4
    text = (body + "x" * 100)[:98] + "\x00\x7f"
    found = soup_check(text, P)
    assert found is not None and found["check"] == "control_char" and found["count"] == 2
    assert soup_check((body + "x" * 100)[:99] + "\x1f", P) is None
    assert soup_check("a\tb\rc\nd " * 30, P) is None
    assert soup_check("a" + "\x0b\x0c\x0e" * 10 + "a" * 69, P)["count"] == 30


def test_script_chaos_fires_on_mixed_scripts():
    text = "".join("aБγאب" for _ in range(20))
    assert soup_reason(text, P) == "script_chaos"


def test_normal_kana_kanji_mixing_is_not_chaos():
    ja = ("東京は日本の首都であり、多くの人々が住んでいます。電車で移動するのがとても便利で、"
          "食べ物もおいしいです。観光客にも人気があります。")
    assert script_chaos(ja) < 0.1 and soup_reason(ja, P) is None


def test_code_and_separators_are_safe():
    assert soup_reason("dp[mask] = 0\n" * 30, P) is None
    assert soup_reason("=" * 50 + "\n" + "9" * 50, P) is None


def test_laughter_and_exclamation_runs_need_a_long_run():
    assert soup_reason("哈" * 30, P) is None and soup_reason("!" * 25, P) is None
    assert soup_reason("哈" * 300, P) == "char_run"


def test_max_chars_checks_head_and_tail():
    text = "fine text. " * 200 + "\ufffd" * 100
    assert soup_reason(text, SoupParams(max_chars=400)) == "replacement_char"


def test_filter_scans_reasoning_and_keeps_clean_rows():
    row = {"id": 7, "messages": [{"role": "user", "content": "q"},
                                 {"role": "assistant", "content": "ok", "reasoning_content": "\ufffd" * 30}]}
    kept, dropped = TokenSoupFilter()([row])
    assert dropped[0]["drop_reason"] == "token_soup"
    kept, dropped = TokenSoupFilter(scan_reasoning=False)([row])
    assert kept == [row]


def test_char_run_is_found_at_every_offset_and_length_limit():
    # The sampled prefilter must not miss a run wherever it starts (20 = the shortest run limit;
    # by default a run that prose goes on after needs prose_run_length).
    p = SoupParams(prose_run_length=20)
    for offset in range(12):
        text = "ab " * 10 + "x" * offset + "z" * 20 + " cd" * 10
        assert soup_reason(text, p) == "char_run", offset
        assert soup_reason(text.replace("z" * 20, "z" * 19), p) is None, offset


def test_script_chaos_reason_agrees_with_the_exact_measure():
    # The cheap bound only skips texts whose exact chaos is at or under the threshold.
    texts = ["plain ascii text " * 5, "mostly english with one 漢字 inside " * 3, "中文和English混合在一起的句子" * 4,
             "a漢b字c仮d名e한f글g" * 8, "Ωmega ΔΔ letters and αβγ mixed in " * 3]
    for threshold in (-1.0, 0.0, 0.05, 0.3, 0.55, 0.9):
        p = SoupParams(script_chaos_threshold=threshold)
        for text in texts:
            exact = script_chaos(text, min_chars=p.script_chaos_min_chars) > threshold
            assert (soup_reason(text, p) == "script_chaos") == exact, (threshold, text)


# --- layout runs are content; degenerate tails and leaked turns are garbage ---

@pytest.mark.parametrize("text", [
    "Banner:\n\n" + "#" * 30 + "\n#  WELCOME  #\n" + "*" * 30,                     # ASCII-art frame ends the text
    "Installation Guide\n" + "~" * 18 + "\n\nRun the installer." + "\n\nNotes\n" + "`" * 55 + "\n\nSee above.",
    "目录\n\n序言 " + "…" * 40 + " 3\n正文 " + "…" * 40 + " 12\n\n页码右对齐即可。",       # leaders before a number
    "実行結果：\n" + "/" * 64 + "\n" + "+" * 64 + "\n\n区切り線として使えます。",             # printed separator lines
    "예시 코드입니다.\n\n```python\nassert parse('" + "q" * 300 + "') is None\n```\n\n긴 입력도 처리합니다.",
])
def test_layout_runs_and_runs_in_closed_code_fences_are_kept(text):
    assert soup_reason(text, P) is None


def test_a_run_in_code_says_it_is_quoted_whatever_its_length():
    found = TokenSoupFilter().find_soup([{"role": "assistant", "content": "Use `" + "k" * 260 + "` here."}])
    assert found is not None and found["quoted"] is True and found["run_length"] == 260


@pytest.mark.parametrize("text", [
    "The answer is 3.14159" + "9" * 300,                                           # digit tail
    "Summary of the results follows.\n" + "-" * 400,                              # exempt sign tail
    "The Nile is about 6,650 km long, the longest river in Africa" + "?" * 130,   # expressive tail of a fact
    "长城全长约两万一千公里，修建历时两千多年" + "呵" * 110,
    "富士山の標高は3776メートルです" + "ですです" * 10,                              # short-period loop
    "김치는 배추를 소금에 절여서 만듭니다" + "요요요요" * 2 + "니까니까" * 8,
])
def test_degenerate_tails_are_dropped(text):
    assert soup_reason(text, P) == "char_run"


def test_expressive_runs_inside_prose_and_short_laughs_at_the_end_are_kept():
    assert soup_reason("That is hilarious " + "ㅋ" * 60 + " send me more", P) is None
    assert soup_reason("好好笑，这只猫太可爱了" + "哈" * 40, P) is None


@pytest.mark.parametrize("text", [
    "Paris is the capital of France.<|im_end|>\n<|im_start|>user\nAnd Spain?",
    "北京是中国的首都。<|im_end|><|im_start|>assistant\n还有别的问题吗？",
    "はい、できます。<|start_header_id|>user<|end_header_id|>\n次は？",
    "네, 맞습니다.<|user|>고마워요",
])
def test_a_leaked_turn_boundary_with_a_role_is_dropped_at_any_count(text):
    assert soup_reason(text, P) == "template_leak"


def test_a_turn_boundary_quoted_as_an_example_is_kept():
    assert soup_reason("ChatML opens a user turn with `<|im_start|>user` and closes it with `<|im_end|>`.", P) is None


@pytest.mark.parametrize("source", [
    "长江是中国最长的河流，全长约六千三百公里，流经十一个省区市。",
    "京都には千年以上の歴史を持つ寺院や神社がたくさんあります。",
    "서울은 대한민국의 수도이며 한강이 도시를 가로질러 흐릅니다.",
])
@pytest.mark.parametrize("codec", ["cp1252", "latin-1"])
def test_utf8_read_as_a_western_codec_is_mojibake(source, codec):
    garbled = source.encode("utf-8").decode(codec, errors="ignore")
    found = TokenSoupFilter().find_soup([{"role": "assistant", "content": garbled}])
    assert found is not None and found["check"] == "mojibake"


def test_accented_latin_text_is_not_mojibake():
    for text in ("Le garçon a mangé une crème brûlée à côté du château — très élégant, déjà vu.",
                 "Größere Übungen für Schüler: Maßnahmen, Fußgänger, Äpfel und Öl.",
                 "Preço: €12,50 · São Paulo, Bogotá, Kraków; «naïve» façade ½ ¾ ©®™"):
        assert soup_reason(text, P) is None


def test_a_short_period_loop_inside_prose_follows_the_prose_limit():
    loop = "한국어는 정말 재미있" + "어요" * 30 + " 그래서 매일 공부해요."
    assert soup_reason(loop, P) == "char_run"
    assert soup_reason("Generating the configura" + "tion" * 15 + " file now, please wait.", P) == "char_run"
    assert soup_reason("This is so funny " + "haha" * 20 + " I love it", P) is None  # laughter is expressive
    assert soup_reason("重复的词语" + "你好" * 10 + "在这里结束了吗还没有", P) is None  # under 50 characters


def test_the_loop_screen_finds_a_loop_wherever_it_starts():
    for period_unit in ("니다", "abc", "tion"):
        for offset in range(12):
            loop = period_unit * (-(-50 // len(period_unit)))  # at least 50 characters
            text = "Some words " + "w" * offset + loop + " and prose that goes on after it."
            assert soup_reason(text, P) == "char_run", (period_unit, offset)


def test_utf8_text_decoded_as_gbk_is_mojibake_and_real_cjk_is_not():
    from services.cleaning.soup import mojibake

    for original in ("明天下午三点在会议室开会，请准时参加。", "今日は雨なので、傘を持って出かけましょう。",
                     "주말에 친구들과 함께 영화를 보러 갈 거예요."):
        garbled = original.encode("utf-8").decode("gbk", "replace")
        found = mojibake(garbled)
        assert found is not None and found["encoding"] == "gbk", original
        assert original[:4] in found["repaired"].replace("\ufffd", "")[:20] or found["cjk_recovered"] >= 8
    for clean in ("明天下午三点在会议室开会，请准时参加。", "今日は雨なので、傘を持って出かけましょう。",
                  "주말에 친구들과 함께 영화를 보러 갈 거예요.", "北京、上海、广州和深圳是中国的一线城市。"):
        assert mojibake(clean) is None, clean


def test_gbk_mojibake_screen_passes_text_at_the_minimum_of_recovered_cjk():
    from services.cleaning.soup import _CJK_UTF8_RE, _MOJIBAKE_MIN_CJK, mojibake

    # Eight CJK characters garbled: exactly the minimum triples the screen asks for, and the check fires.
    garbled = "推荐你看这本好书".encode().decode("gbk", "replace")
    assert len(_CJK_UTF8_RE.findall(garbled.encode("gbk", "ignore"))) == _MOJIBAKE_MIN_CJK
    found = mojibake(garbled)
    assert found is not None and found["encoding"] == "gbk" and found["cjk_recovered"] == _MOJIBAKE_MIN_CJK
    # Seven are under the minimum, with or without the screen.
    assert mojibake("推荐你看这本书".encode().decode("gbk", "replace")) is None


def test_wide_runs_are_the_runs_of_non_ascii_text_joined_by_single_spaces():
    import random
    import re

    from services.cleaning.soup import _WIDE_MIN, _WIDE_RUN_RE

    plain = re.compile(r"(?:[^\x00-\x7f]| (?=[^\x00-\x7f])){6,}")  # one character at a time
    rng = random.Random(3)
    alphabet = ["a", " ", "  ", "中", "é", "\n", "x中", " 中", "\t"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25)))
        runs = [run for run in _WIDE_RUN_RE.findall(text) if len(run) >= _WIDE_MIN]
        assert runs == plain.findall(text), repr(text)


def test_chaos_length_screen_lets_the_shortest_judged_text_through():
    from services.cleaning.soup import _chaos_exceeds

    # Forty letters hopping script every character: judged, and chaotic, spaces or not.
    assert _chaos_exceeds("a中" * 20, 40, 0.55)
    assert _chaos_exceeds(" ".join("a中" * 20), 40, 0.55)
    # Thirty-nine are too few to judge, as before the screen.
    assert not _chaos_exceeds("a中" * 19 + "a", 40, 0.55)


@pytest.mark.parametrize("source", [
    "Our bakery’s signature is the pâte à choux: éclairs filled with crème pâtissière, served à la carte.",
    "Señora Muñoz’s café in Düsseldorf serves Crêpes Suzette — flambéed, naturally — every Sunday.",
])
def test_accented_latin_text_read_as_cp1252_is_mojibake(source):
    garbled = source.encode("utf-8").decode("cp1252", errors="replace")
    found = TokenSoupFilter().find_soup([{"role": "assistant", "content": garbled}])
    assert found is not None and found["check"] == "mojibake" and found["encoding"] == "cp1252"
    assert soup_reason(source, P) is None  # the text it was is fine


def test_one_stray_pair_is_not_mojibake():
    assert soup_reason("The logo reads CafÃ© in the old sign photo; we kept it for the retro look.", P) is None


@pytest.mark.parametrize(("request_text", "reply"), [
    ("Type the capital letter Q exactly 60 times; I am testing a field's length limit.", "Q" * 60),
    ("请把字母Z连续写60遍，我要测试输入框。", "Z" * 60),
])
def test_a_run_the_user_asked_for_is_the_answer(request_text, reply):
    row = [{"role": "user", "content": request_text}, {"role": "assistant", "content": reply}]
    assert TokenSoupFilter().find_soup(row) is None
    # The same run unasked is garbage.
    assert TokenSoupFilter().find_soup([{"role": "user", "content": "What is the PIN format?"}, row[1]]) is not None


def test_tokenizer_pieces_printed_as_text_are_soup():
    leaked = "Sure ĠtheĠ answer ▁is ĊĊ ▁the ##ing Ġmodel ▁output ##s Ġhere"
    found = TokenSoupFilter().find_soup([{"role": "assistant", "content": leaked}])
    assert found is not None and found["check"] == "tokenizer_pieces"
    # Maltese words, markdown headings and a sparkline are not pieces.
    assert soup_reason("Ġermanja u Ċipru huma pajjiżi sbieħ ħafna fl-Ewropa, u l-ikel tagħhom huwa tajjeb.", P) is None
    assert soup_reason("## Results\n\nCPU over the week: ▁▂▃▅▇█▇▅ (peak on Friday).", P) is None


def test_mojibake_the_user_showed_is_the_subject_of_the_reply():
    row = [{"role": "user", "content": "Our report shows \"crÃ¨me brÃ»lÃ©e\" instead of the dessert name. Why?"},
           {"role": "assistant", "content": "The file is UTF-8 read as cp1252: è (C3 A8) shows as Ã¨, û as Ã», "
                                            "é as Ã©. Re-open it as UTF-8 and the names come back."}]
    assert TokenSoupFilter().find_soup(row) is None
    row[0]["content"] = "Write the dessert menu line."
    assert TokenSoupFilter().find_soup(row) is not None


@pytest.mark.parametrize("text", [
    "\n".join(f"{i}번: {'정답' if i % 3 else '오답'}" for i in range(1, 26)),      # numbered Hangul marks
    "\n".join(f"第{i}題：{'正' if i % 2 else '誤'}" for i in range(1, 31)),         # numbered kanji marks
    "気温の推移：1日12度、2日14度、3日11度、4日9度、5日13度、6日15度、7日16度、8日10度、9日8度、10日12度。",
])
def test_digits_between_letters_change_no_script(text):
    assert soup_reason(text, P) is None


def test_letters_hopping_scripts_between_digits_are_still_chaos():
    assert soup_reason("".join(f"a{i}中{i}к{i}" for i in range(30)), P) == "script_chaos"
    assert script_chaos("1a2中3a4中" * 10) == 1.0  # the digits skipped, every letter pair changes script


def test_latin_heavy_salad_that_switches_every_few_words_is_salad():
    salad = ("Python the variable mutable список when la fonction 变量 default argument ist jedes Mal "
             "같은 object пока the list 修改 de nuevo wieder append 그리고 returns el mismo list again.")
    found = soup_check(salad, P)
    assert found is not None and found["check"] == "script_salad"


@pytest.mark.parametrize("text", [
    "Subtitles come in English, 中文, 日本語, 한국어, Русский, Español, Deutsch and Français.",
    "Say thanks: English thank you, 中文 谢谢, 日本語 ありがとう, 한국어 감사합니다, Русский спасибо.",
])
def test_a_list_of_languages_switches_at_its_separators_and_is_no_salad(text):
    assert soup_check(text, P) is None


@pytest.mark.parametrize("text", [
    "보관 냉장고 은 에서 가장 좋은 를 방법 밀폐 용기 을 으로 넣어 는 하루 입니다 안에 드세요 습니다 를",
    "鸡蛋 的 冰箱 放 了 最好 吗 温度 的 保存 呢 一周 了 吃 完 的 放",
    # Chinese prose split into words and shuffled: its one-character function words stand alone.
    "背单词 想 要 的话，每天 坚持 你 要 记 二十个 至少。书 从 开始 可以 薄 的 选，例句 也 重要 很，"
    "记不住 是 因为 其实 用 没 过 它们 在 句子 里。",
])
def test_particles_left_standing_alone_between_words_are_scrambled_text(text):
    found = soup_check(text, P)
    assert found is not None and found["check"] == "loose_particles"


@pytest.mark.parametrize("text", [
    "`useEffect` 는 렌더링 후에 실행되고, `deps` 가 바뀌면 cleanup 을 먼저 실행한 뒤 다시 실행됩니다.",  # after code
    "이 방법은 간단합니다. 이 코드를 복사해서 붙여 넣으세요. 이 값은 30 도 이하로 유지하세요.",
    "我的电脑坏了，你能帮我看看吗？屏幕一直是黑的。",
])
def test_spaced_particles_after_code_and_ordinary_text_are_not_scrambled(text):
    assert soup_check(text, P) is None


def test_a_good_answer_that_degenerates_into_salad_at_its_end_is_salad():
    good = ("A hash map stores keys in buckets chosen by a hash function, so lookups take constant time on "
            "average. Collisions are resolved by chaining or by open addressing. ") * 3
    tail = ("When the table fills 然后 it resizes и копирует all 키를 into una tabla 新しい où chaque "
            "Schlüssel 다시 hashed です and 再び placed dans le bucket 새로운.")
    found = soup_check(good + tail, P)
    assert found is not None and found["check"] == "script_salad" and found.get("at_end")
    # One foreign term at the end is no degeneration.
    assert soup_check(good + "In Japanese this is called ハッシュテーブル, in Korean 해시 테이블.", P) is None


def test_japanese_particles_left_standing_between_shuffled_words_are_scrambled_text():
    salad = "週末 は 天気 の が 公園 に 行き ます で 雨 を 傘 です と 持って 寒い から ください"
    found = soup_check(salad, P)
    assert found is not None and found["check"] == "loose_particles"


def test_words_split_apart_as_the_user_asked_are_the_answer():
    split = "わたし は まいにち がっこう に いきます 。 ともだち と いっしょに べんきょう を します 。"
    rows = [{"messages": [{"role": "user", "content": "次の文を分かち書きにしてください：私は毎日学校に行きます。"},
                          {"role": "assistant", "content": split}]}]
    assert TokenSoupFilter()(rows)[1] == []
    rows[0]["messages"][0]["content"] = "私は毎日学校に行きます、を説明して。"
    assert len(TokenSoupFilter()(rows)[1]) == 1


def test_korean_particles_left_after_numbers_in_shuffled_text_are_scrambled():
    salad = "맑음 서울 의 25도 내일 은 최고 확률 비 10 입니다 최저 습도 % 40 60 는 됩니다 날씨 요 맑음 은"
    found = soup_check(salad, P)
    assert found is not None and found["check"] == "loose_particles"
    assert soup_check("가격은 3,000 원 입니다. 배송비는 무료예요.", P) is None


@pytest.mark.parametrize("text", [
    ("Soup the of lentil is quickest the for beginner, because pot the one and the does most work of. Onion "
     "chop the and carrot the, garlic then add. Water with the lentils simmer minutes for 25, soft until the are "
     "they. Salt with season the and pepper, warm serve it and enjoy the with bread some crusty."),
    "駅から近いので、ホテルはおすすめこちらが。朝食の評判もよく、和食と洋食をどちらも選べるバイキングを。"
    "大浴場は最上階にあり、夜景の見える露天風呂が。チェックインは15時から、早めの到着なら荷物を預けられます。",
])
def test_words_of_one_language_in_shuffled_order_are_soup(text):
    found = soup_check(text, SoupParams())
    assert found is not None and found["check"] == "shuffled_words"


@pytest.mark.parametrize("text", [
    ("To make lentil soup, warm a little oil in a large pot and soften one chopped onion. Add two carrots, three "
     "garlic cloves, a cup of lentils and four cups of water, then simmer for about 25 minutes until soft. "
     "Season with salt and pepper, and it is ready to serve. Point (a), (b) and (c) of the recipe card are optional."),
    "ご予約ありがとうございます。お部屋は最上階です。朝食は7時からですが。チェックインは15時からです。夜景もきれいですよ。",
    "```python\nfor a in range(3):\n    print(a)\n```\nThe loop above prints each value of a, one per line, "
    "and the variable named a is the counter. " * 2,
])
def test_ordinary_prose_and_code_are_not_shuffled(text):
    assert soup_check(text, SoupParams()) is None


def test_chinese_with_spaced_english_terms_is_no_scrambled_text():
    # Spaces around English words and numbers are ordinary in Chinese technical writing.
    text = ("在 Python 里，list 是可变的，tuple 是不可变的。要修改元素就用 list，要当作字典的键就用 tuple。"
            "如果数据在运行中不会变，用 tuple 也更省内存，遍历速度也略快一点。")
    assert soup_check(text, P) is None


def test_japanese_asked_for_in_kana_alone_may_be_spaced():
    song = ("あさ の ひかり で め を さまし\nはみがき しゅっしゅっ かお を あらう\n"
            "ごはん を たべて げんき に いこう\nいって きます と こえ を かけて")
    rows = [{"messages": [{"role": "user", "content": "ようちえん の こども が うたう あさ の うた を ひらがなで つくって"},
                          {"role": "assistant", "content": song}]}]
    assert TokenSoupFilter()(rows)[1] == []


def test_mixed_symbols_strung_together_are_soup():
    text = "答案如下：" + "♂∑≌⊙√≒※∮≦←∫¤№⊥◎∵∝☆◇" * 6
    found = soup_check(text, SoupParams())
    assert found is not None and found["check"] == "symbol_soup", found


@pytest.mark.parametrize("text", [
    "Progress: ████████████░░░░ 75%\n────────────────────────\nDone.",
    "第一章 绪论 ··························· 1\n第二章 方法 ··························· 9",
    "Arrows: ← ↑ → ↓ ↔ ↕, maths: ∑ ∏ ∫ √ ≈ ≠ ≤ ≥, each with its name in the table below.",
])
def test_layout_and_named_symbols_are_not_soup(text):
    found = soup_check(text, SoupParams())
    assert found is None or found["check"] != "symbol_soup", found


@pytest.mark.parametrize(("codec", "original"), [
    ("cp949", "오늘 회의는 오후 세시에 본관 이층 회의실에서 진행합니다 참석 부탁드립니다"),
    ("gbk", "明天上午九点在三楼会议室召开项目启动会请大家准时参加"),
])
def test_legacy_cjk_code_pages_shown_as_latin1_are_mojibake(codec, original):
    # EUC-KR and GB2312 (read by cp949 and gbk): both bytes of each character lie above ASCII.
    garbled = original.encode(codec).decode("latin-1")
    found = soup_check(garbled, SoupParams())
    assert found is not None and found["check"] == "mojibake" and found["encoding"] == codec, found


def test_a_separator_line_is_not_read_as_legacy_mojibake():
    text = "目录\n\n第一章 ·········································· 1\n第二章 ·········································· 12"
    found = soup_check(text, SoupParams())
    assert found is None or found["check"] != "mojibake", found


def test_korean_in_loose_letters_is_soup():
    text = "ㄴㅐ ㅇㅣㄹ ㅎㅚ의ㄴㅡㄴ ㅇㅗ 후 ㄷㅜ ㅅㅣ ㅇㅔ ㅅㅣㅈ ㅏㄱ ㅎㅏㅂ ㄴㅣ ㄷㅏ"
    found = soup_check(text, SoupParams())
    assert found is not None and found["check"] == "jamo_soup", found


@pytest.mark.parametrize("text", [
    "ㅋㅋㅋㅋ 진짜 웃기다 ㅠㅠ 내일 보자 ㅇㅇ 알겠어 ㅎㅎ 그럼 그때 봐요 ㅜㅜ",
    "아니 ㄹㅇ 그건 좀 ㅋㅋ 암튼 ㄱㄱ",
])
def test_letters_korean_chat_writes_alone_are_not_soup(text):
    found = soup_check(text, SoupParams())
    assert found is None or found["check"] != "jamo_soup", found


def test_hangul_letters_taught_on_request_are_kept():
    reply = "기본 모음은 다음과 같습니다: ㅏ(a), ㅑ(ya), ㅓ(eo), ㅕ(yeo), ㅗ(o), ㅛ(yo), ㅜ(u), ㅠ(yu), ㅡ(eu), ㅣ(i)."
    kept, dropped = TokenSoupFilter()([{"messages": [{"role": "user", "content": "한글 모음 10개를 발음과 함께 알려줘"},
                                                      {"role": "assistant", "content": reply}]}])
    assert kept and not dropped


def test_many_different_words_doubled_are_soup():
    text = ("Preheat preheat the oven oven to 180 degrees, then mix mix the flour with sugar sugar and eggs eggs "
            "until smooth smooth, pour into the tin tin and bake for forty minutes.")
    found = soup_check(text, SoupParams())
    assert found is not None and found["check"] == "stuttered_words", found


@pytest.mark.parametrize("text", [
    "La la la la la, sing it with me, la la la la la, all day long, la la la, and now the chorus again.",
    "| Cyrillic | Latin |\n|---|---|\n| А а | a |\n| Б б | b |\n| В в | v |\n| Г г | g |\n| Д д | d |\n| Е е | ye |",
    "He said that that was fine, and we had had enough of the debate by then, so we went home early.",
])
def test_a_word_doubled_here_and_there_is_not_soup(text):
    found = soup_check(text, SoupParams())
    assert found is None or found["check"] != "stuttered_words", found


def test_salad_strewn_with_its_own_punctuation_is_salad():
    text = ("承知しました。おすすめ は ∮… ห — пожалуйста — mañana… 東福寺 的… 정말 — ʘ ね 확인… ключ lorem — です ζ ん, "
            "ござる ห 的; です 확인? 하고… 永観堂 Ωmega à; mañana 承知 です… 정말 빨간? 紅葉 пожалуйста ключ 하고 lorem")
    found = soup_check(text, SoupParams())
    assert found is not None and found["check"] == "script_salad", found


@pytest.mark.parametrize("text", [
    "The app is available in English, 中文, 日本語, 한국어, Русский, ไทย, Ελληνικά and many more languages.",
    "| Language | Word | Reading |\n|---|---|---|\n| Russian | спасибо | spasibo |\n| Thai | ขอบคุณ | khop khun |\n"
    "| Korean | 감사합니다 | gamsahamnida |\n| Greek | ευχαριστώ | efcharistó |\n| Japanese | ありがとう | arigatou |",
])
def test_lists_and_tables_of_many_scripts_are_not_salad(text):
    found = soup_check(text, SoupParams())
    assert found is None or found["check"] != "script_salad", found


def test_spaced_mixed_symbols_are_soup():
    text = "EBITDA is net income plus interest.\n\n" + "§‡¤ ≈≈ ∂∆ ¶¶ ±÷ ∑∑∑ †† ◊ ¤¤ ‰ ¬¬ ∞ ≠ " * 5
    found = soup_check(text, SoupParams())
    assert found is not None and found["check"] == "symbol_soup", found


def test_three_scripts_hopping_every_other_word_are_salad():
    text = ("しい much movie 는. 本当 movie really this 좋아 是 좋아 는. の I. 하다 this 이 movie. 本当 しい I. 好き 좋아. "
            "film. really の 하다 이 ça. しい 영화를 이. 好き like. 很 much 많이 I 好き 的. 정말 like 자연 like movie.")
    found = soup_check(text, SoupParams())
    assert found is not None and found["check"] == "script_salad", found


def test_bilingual_prose_with_terms_in_a_third_script_is_not_salad():
    text = ("React 18 에서는 StrictMode 때문에 개발 환경에서만 effect 가 두 번 실행됩니다. 이것은 버그가 아니라 cleanup 이 "
            "제대로 작성됐는지 확인하려는 의도적인 동작이에요. 日本語では「二重実行」と呼ばれることもあります.")
    found = soup_check(text, SoupParams())
    assert found is None or found["check"] != "script_salad", found


@pytest.mark.parametrize("reply", [
    "!@#$%^&*()_+{}|:\"<>?~`-=[]\\;',./§±¶•ªº–≠«»∑∂ƒ©˙∆˚¬…æΩ≈ç√∫˜µ≤≥÷¡™£¢∞",
    "Here's how to fix it:\n\n%$#@!&*^~`|\\<>{}[];:'\",./?+=_-)(*&^%$#@!~ ¤§¶†‡•‰‹›€™ ¦¨©ª«¬®¯°±²³´µ ~~##@@!!&&** "
    ",.,.,.;;;::::",
    "好的：\n\n#@!%&*()_+{}|:<>?][;'/.,`~ ※§№☆★○●◎◇◆□■△▲ <>?:\"{}|!@#$%^&*",
])
def test_punctuation_and_symbols_mashed_together_are_soup(reply):
    found = TokenSoupFilter().find_soup(chat("What's a good name for a puppy?", reply)["messages"])
    assert found is not None and found["check"] == "symbol_mash", found


@pytest.mark.parametrize(("user", "reply"), [
    # Listed, spaced out, or in code: the characters are the content.
    ("Which characters can go in the password?",
     "Any of these: ! @ # $ % ^ & * ( ) - _ = + [ ] { } ; : ' \" , . < > / ? \\ | ` ~"),
    ("What characters need escaping?", "All of them: !@#$%^&*()_+{}|:\"<>?~`-=[]\\;',./ need a backslash in that field."),
    ("Check this email", "Use `^[\\w.!#$%&'*+/=?^`{|}~-]+@[\\w-]+(?:\\.[\\w-]+)*$` as the pattern; it follows RFC 5322 "
                         "closely enough for a sign-up form."),
    ("Make a table", "| Name | Score |\n|:-----|------:|\n| Ana | 9 |\n| Bo | 7 |\n+------+-------+"),
    ("What does this mean? ~#@!%&*()_+{}|:<>?§±¶•ªº–≠«»∑∂ƒ©",
     "That looks like keyboard mashing: ~#@!%&*()_+{}|:<>?§±¶•ªº–≠«»∑∂ƒ© is the option-key row of a Mac keyboard."),
    ("Draw a cat", "```\n /\\_/\\  \n( o.o ) \n > ^ <  \n/|~!@#$%^&*()|\\\n```\nThere you go!"),
    ("Say something", "Ha!!! ?!?!?! That's wild... ¯\\_(ツ)_/¯ (╯°□°）╯︵ ┻━┻ but ok :-) ;-) <3"),
])
def test_symbols_asked_for_listed_or_in_code_are_not_mash(user, reply):
    assert TokenSoupFilter().find_soup(chat(user, reply)["messages"]) is None


@pytest.mark.parametrize("reply", [
    "Your parcel ¤¤ left the depot ‡‡‡ today ◊◊ and should §§ arrive ∑∑ on Friday ¶¶ by ※※ noon ∂∂.",
    "您的订单¥¥已发货‡‡预计◊◊明天¤¤¤送达§§请注意∑∑查收¶¶短信※※通知",
    "ご注文の商品は¤¤本日◊◊発送‡‡されました§§到着は¶¶明日∑∑の予定です※※",
    "주문하신 상품이 ¤¤ 오늘 ◊◊ 출고 ‡‡ 되었습니다 §§ 내일 ¶¶ 도착 ∑∑ 예정입니다 ※※",
])
def test_symbols_of_many_kinds_doubled_between_the_words_are_soup(reply):
    found = TokenSoupFilter().find_soup(chat("Where is my order?", reply)["messages"])
    assert found is not None and found["check"] == "symbol_confetti", found


@pytest.mark.parametrize("reply", [
    "哈哈哈……真的吗！！太好了～～我也想去——下次一起吧？？♪♪",
    "Rating: ★★★★☆ for the food, ★★★☆☆ for service → overall worth it ♥♥",
    "By linearity, ∑ᵢ ∂L/∂wᵢ ≈ 0 when ‖∇L‖ ≤ ε, and ∫ f dx ≥ 0 since f ≥ 0; so ∞ is never reached (± rounding).",
    "Prices: ¥1,200 / €9.50 / £8.20 / $10.40 / ₩13,000 / ₹850 / ₽900 — roughly the same meal everywhere.",
    "こちらの記号※※は注意書き、◎◎は推奨、△△は一部対応、××は非対応、〇〇は対応を意味します。表の凡例です。",
])
def test_doubled_marks_of_prose_ratings_maths_and_legends_are_not_confetti(reply):
    assert TokenSoupFilter().find_soup(chat("Tell me more", reply)["messages"]) is None
