import re

from services.cleaning.text import (
    cjk_count,
    cjk_latin_counts,
    cjk_ratio,
    has_payload,
    is_agent_row,
    message_text,
    normalize_tool_calls,
    split_think,
)

_CJK_CHAR = re.compile("[\u4e00-\u9fff\u3040-\u309f\u30a0-\u30ff\uac00-\ud7a3]")


def test_message_text_projects_strings_parts_and_dicts():
    parts = [{"type": "text", "text": "a"}, {"type": "image_url"}, {"type": "text", "text": "b"}]
    assert message_text("x") == "x"
    assert message_text(parts) == "a b"
    assert message_text(parts, sep="") == "ab"
    assert message_text({"type": "text", "text": "t"}) == "t"
    assert message_text(None) == "" and message_text(3) == ""


def test_cjk_ratio_ignores_only_spaces_newlines_tabs():
    assert abs(cjk_ratio("hello 世界") - 2 / 7) < 1e-9
    assert cjk_ratio("") == 0.0


def test_cjk_count_is_the_same_on_short_and_long_text():
    # Long text is counted by table lookup, short text by regex: both must agree, range edges,
    # astral characters (two UTF-16 units) and lone surrogates included.
    piece = "漢字かなカナ한글 latin ÿ\u4dff\u9fff\u3040\u309f\u30a0\u30ff\uac00\ud7a3\ud7a4\U00020000\U0001f600 \ud800"
    for text in (piece, piece * 40):
        assert cjk_count(text) == len(_CJK_CHAR.findall(text))
    assert cjk_count("ascii only " * 50) == 0


def test_cjk_latin_counts_counts_cjk_and_ascii_letters():
    for text in ("Hello 世界", ("Hello 世界, ÿé 123 \U00020000 こんにちは " * 30)):
        assert cjk_latin_counts(text) == (len(_CJK_CHAR.findall(text)), len(re.findall("[A-Za-z]", text)))
    assert cjk_latin_counts("abc def " * 40) == (0, 240)


def test_cjk_ratio_on_long_text_matches_the_definition():
    text = "中文 text\twith\nblanks 한국어 " * 20
    rest = text.replace(" ", "").replace("\n", "").replace("\t", "")
    assert cjk_ratio(text) == len(_CJK_CHAR.findall(rest)) / len(rest)
    assert cjk_ratio(" \n\t") == 0.0


def test_normalize_tool_calls_treats_empty_forms_as_none():
    for empty in (None, "", "[]", [], "not json", "{}"):
        assert normalize_tool_calls(empty) is None
    calls = normalize_tool_calls('[{"function": "{\\"name\\": \\"f\\"}"}]')
    assert calls == [{"function": {"name": "f"}}]
    assert normalize_tool_calls(["{bad", {}]) is None


def test_agent_row_detection():
    assert is_agent_row([{"role": "tool", "content": "x"}])
    assert is_agent_row([{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}])
    assert not is_agent_row([{"role": "assistant", "tool_calls": "[]"}, "junk"])


def test_has_payload_counts_reasoning():
    assert has_payload({"role": "assistant", "content": "", "reasoning_content": "why"})
    assert not has_payload({"role": "assistant", "content": "  "})


def test_split_think_keeps_pre_think_text_and_treats_unclosed_as_think():
    think, resp = split_think("before <think>a</think> after <THINKING>b</thinking> end")
    assert think == "a\nb" and "before" in resp and "after" in resp and "end" in resp
    think, resp = split_think("answer <think>truncated reasoning")
    assert think == "truncated reasoning" and resp == "answer"


def test_cjk_script_counts_tell_ideographs_kana_and_hangul_apart():
    from services.cleaning.text import cjk_script_counts

    assert cjk_script_counts("東京へ行きます 서울 ok") == (3, 4, 2)
    assert cjk_script_counts("plain ascii") == (0, 0, 0)
    assert cjk_script_counts("𠮷野家") == (2, 0, 0)  # an astral ideograph is no BMP unit and is not counted
