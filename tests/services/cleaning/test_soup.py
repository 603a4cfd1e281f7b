import pytest

from services.cleaning.soup import SoupParams, TokenSoupFilter, script_chaos, soup_reason

P = SoupParams()


@pytest.mark.parametrize(("text", "reason"), [
    ("ab\ufffd" * 10, "replacement_char"), ("ab\x01" * 10, "control_char"), ("a\ue000" * 10, "private_use"),
    ("<|im_start|> " * 20, "special_tokens"), ("a" * 25, "char_run"),
])
def test_each_check_fires(text, reason):
    assert soup_reason(text, P) == reason


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
