"""Hesitation and correction-cascade markers for DeadLoopFilter, per language.

Differences from the reference, each deliberate (see the tests named for them):
- 等等 counts only at the start of a clause; after a noun it means "etc.";
- 我不确定 ("I'm not sure") is an honest statement, not hesitation;
- Korean 음/어 count only as standalone interjections, never inside words (다음, 어떻게);
- 重新 alone ("re-", as in restart) is no cascade marker, only 重新想/重新考虑/重新算.
"""

from __future__ import annotations

import re

__all__ = ["count_cascade_starts", "count_hesitations", "marker_upper_bounds"]

_EN = (
    r"\b(?:wait(?:\.{2,}|\s*,?\s*(?:wait|no|actually|hmm|let)\b)"
    r"|(?:no|oh|but)\s+wait\b|h+m{2,}\b|hm+\b|uh+m*\b|um+\b"
    r"|actually,?\s+(?:no|wait|i\s+was)\b|no,\s*actually,?\s+(?:that|this|i)\b"
    r"|let\s+me\s+(?:rethink|re-think|try\s+again|start\s+over|reconsider)\b"
    r"|i'?ll\s+(?:start\s+over|try\s+again|redo\s+this)\b"
    r"|i'?m\s+(?:getting\s+confused|going\s+in\s+circles|lost\s+here|not\s+sure\s+where)\b"
    r"|this\s+is\s+(?:getting|becoming)\s+(?:messy|complicated\s+fast|circular)\b"
    r"|i\s+keep\s+(?:making|getting)\s+the\s+same\s+error\b"
    r"|i\s+(?:made|keep\s+making)\s+the\s+same\s+(?:mistake|error)\s+again\b"
    # A correction labelled as one ("Correction:", "Correction again:").
    r"|correction(?:\s+again)?\s*:)"
)
# Clause start: beginning, whitespace or punctuation, so 橙子等等 (a list's "etc.") is not hit.
_ZH_START = r"(?:(?<=^)|(?<=[\s，,。.！!？?；;：:…「“\"'（(]))"
_ZH = (
    _ZH_START + r"(?:哦?等等|等一等|等一下[，,]|嗯[，,…。])"
    r"|不不不+|嗯{2,}|呃+|不对[，,]?\s*(?:等等|重新|让我)|错了[，,]?\s*让我"
    r"|让我(?:重新|再|再次)(?:想|试|来|考虑|计算)|我(?:再|重新)(?:想想|试试|来一次|考虑)"
    r"|我(?:越来越|有点)?(?:搞不清楚?|迷糊了?|乱了)|这(?:变得|越来越)(?:复杂|乱|难以?理清)"
    r"|我(?:好像|似乎|又)(?:搞|弄|查|算|看|写)错了?|我(?:又犯|再次犯)了?错|一直(?:出错|犯错|搞错)"
    # Taking back what was just said: "no, rather ...", "never mind", a labelled correction.
    r"|不[，,]\s*还是|算了[，,]|其实我刚才|(?:再次?|最终)?更正[:：]"
)
_JA = (
    r"ちょっと待って|待って待って|いや待って|えっと+|うーん+|あれ[、,]?(?:また|もう一度)"
    r"|もう一度考え直|やり直し|混乱してきた|わからなくなって"
    # "No, wait", "no, that's wrong", a sum redone, "again from the top": the assistant correcting itself.
    r"|いや[、,]?\s*(?:待って|違|やっぱり)|(?:計算|確認|検討|見)し直|数え直|もう一度(?:最初から|計算し|確認し)"
    r"|訂正します|いえ[、,]\s*(?:失礼|違)"
    r"|あれ[、,]?\s*(?:でも|おかしい|違)"
)
# Standalone syllables only: not preceded or followed by another hangul syllable.
_KO = (
    r"잠깐(?:만요?)?[,.!…]|아\s+잠깐|(?<![가-힣])(?:음+|어+)(?![가-힣])(?=\s*[,.!?…~])"
    r"|다시\s*(?:생각|시작|해보|해야|계산|확인해|하겠|할게|풀)|헷갈(?:리기|리네|려서)|계속\s*(?:틀리|실수|잘못)"
    # "I got it wrong", "this one is wrong too": the assistant correcting itself.
    r"|잘못\s*(?:계산|했|봤|읽)|틀렸(?:습니다|네요|어요|다)|(?:다시\s*)?정정[:：]|(?<![가-힣])아니,\s"
)

# English and CJK markers are separate patterns so ASCII text (most text) pays for one only.
# Matched against lowercased text without re.I, behind a first-letter lookahead: about 3x faster.
_HES_EN = re.compile(r"\b(?=[wnobhualtic])(?:" + _EN[2:] + ")")
_HES_CJK = re.compile(f"{_ZH}|{_JA}|{_KO}")

# Correction-cascade markers (``let me`` deliberately excluded: agent preambles use it).
_CAS_EN = re.compile(
    r"\b(?=[wahonic])(?:wait|actually|hmm|no\s+wait|oh\s+wait|i\s+was\s+wrong|i\s+made\s+an?\s+(?:error|mistake)"
    r"|correction)\b"
)
_CAS_CJK = re.compile(_ZH_START + r"等等|不对|重新(?:想|考虑|算|计算|来)|错了|嗯{2,}|让我再|更正|정정"
                      r"|いや[、,]?\s*(?:待って|違|やっぱり)|(?:計算|確認|検討|見)し直")


def count_hesitations(text: str, low: str | None = None) -> int:
    """Number of hesitation markers in ``text`` (all languages); ``low`` = text.lower() if at hand."""
    n = len(_HES_EN.findall(text.lower() if low is None else low))
    return n if text.isascii() else n + len(_HES_CJK.findall(text))


def count_cascade_starts(text: str, low: str | None = None) -> list[int]:
    """Sorted start offsets of correction-cascade markers; ``low`` = text.lower() if at hand."""
    starts = [m.start() for m in _CAS_EN.finditer(text.lower() if low is None else low)]
    if not text.isascii():
        starts = sorted(starts + [m.start() for m in _CAS_CJK.finditer(text)])
    return starts


# Every marker match contains at least one of these substrings, and matches do not
# overlap, so summed substring counts bound the match count from above. Most texts
# fall below the count a signal needs, and the regexes never run on them.
_HES_TRIGGERS_EN = ("wait", "hm", "uh", "um", "actually", "let me", "start over", "try again", "redo this",
                    "getting confused", "in circles", "lost here", "not sure where", "this is", "the same",
                    "correction")
_HES_TRIGGERS_CJK = ("等等", "等一等", "不不", "嗯嗯", "呃", "不对", "错了", "让我", "我再", "我重新", "搞不清", "迷糊",
                     "乱了", "复杂", "变得乱", "越来越乱", "难以理清", "难理清",
                     "搞错", "弄错", "犯了错", "犯错", "出错",
                     "待って", "えっと", "うーん", "あれ", "もう一度", "やり直", "混乱", "わからなく", "いや", "し直",
                     "数え直", "訂正します", "いえ",
                     "잠깐", "음", "어", "다시", "헷갈", "계속", "잘못", "틀렸",
                     "嗯", "等一下", "查错", "算错", "看错", "写错", "不，", "不,", "算了", "其实我刚才", "更正",
                     "정정", "아니,")
_CAS_TRIGGERS_EN = ("wait", "actually", "hmm", "i was wrong", "i made a", "correction")
_CAS_TRIGGERS_CJK = ("等等", "不对", "重新", "错了", "嗯嗯", "让我再", "いや", "し直", "更正", "정정")


def _any_of(triggers: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, triggers)))


# One search tells whether any CJK trigger occurs at all: the regex engine skips ahead
# on the triggers' rare first characters, about 10x faster than counting each one.
_HES_ANY_CJK = _any_of(_HES_TRIGGERS_CJK)
_CAS_ANY_CJK = _any_of(_CAS_TRIGGERS_CJK)


# The English triggers of both signals ("wait", "actually"): counted once for the two bounds.
_SHARED_EN = tuple(t for t in _HES_TRIGGERS_EN if t in _CAS_TRIGGERS_EN)
_HES_ONLY_EN = tuple(t for t in _HES_TRIGGERS_EN if t not in _SHARED_EN)
_CAS_ONLY_EN = tuple(t for t in _CAS_TRIGGERS_EN if t not in _SHARED_EN)


def marker_upper_bounds(text: str, low: str) -> tuple[int, int]:
    """Upper bounds of the hesitation and the cascade marker counts from substring counts (cheap).

    ``low`` is ``text.lower()``. Each bound is the sum of its triggers' counts; a trigger of both
    is counted once and added to each.
    """
    # map() over the bound method keeps the loop in C (a generator costs more than the counts).
    shared = sum(map(low.count, _SHARED_EN))
    hes = shared + sum(map(low.count, _HES_ONLY_EN))
    cas = shared + sum(map(low.count, _CAS_ONLY_EN))
    if not text.isascii():
        if _HES_ANY_CJK.search(text):
            hes += sum(map(text.count, _HES_TRIGGERS_CJK))
        if _CAS_ANY_CJK.search(text):
            cas += sum(map(text.count, _CAS_TRIGGERS_CJK))
    return hes, cas
