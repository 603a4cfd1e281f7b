import pytest

from services.cleaning.soup import SoupParams, TokenSoupFilter, script_chaos, soup_check, soup_reason

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
