"""DeadLoopFilter: drop rows whose assistant hesitates, cascades corrections or repeats itself."""

from __future__ import annotations

import contextlib
import itertools
import re
from collections import Counter
from collections.abc import Hashable, Sequence
from functools import partial
from operator import itemgetter, methodcaller
from typing import Any

import numpy as np
import orjson
from pydantic import AliasChoices, Field

from services.cleaning.base import Row, StepOutput
from services.cleaning.markers import count_cascade_starts, count_hesitations, marker_upper_bounds
from services.cleaning.params import ParamStep, StepParams
from services.cleaning.requests import (
    REQUEST_HEAD_CHARS,
    asks_for_each_period,
    asks_for_fiction,
    asks_for_repetition,
    asks_for_variety,
    closed_question,
)
from services.cleaning.text import (
    LIST_ITEM_RE,
    cjk_count,
    cjk_ratio,
    is_agent_row,
    message_text,
    normalize_tool_calls,
    reasoning_of,
    split_think,
    text_weight,
)

__all__ = ["DeadLoopFilter", "DeadLoopParams", "find_cycle", "ngram_repetition", "repeated_item", "repeated_list_head",
           "repeated_paragraph",
           "repeated_units", "repetition_exceeds"]


class DeadLoopParams(StepParams):
    """Thresholds of DeadLoopFilter: a response profile and a laxer think profile.

    Each threshold also accepts the reference's keyword (``hesitation_density_threshold``,
    ``cascade_threshold``, ``repetition_threshold``, ``think_hesitation_density_threshold``,
    ``think_repetition_threshold``): the same field under its other name.
    """

    response_density: float = Field(
        7.0, validation_alias=AliasChoices("response_density", "hesitation_density_threshold"),
        description="Hesitation markers per 1000 chars (strict >); alias hesitation_density_threshold.")
    think_density: float = Field(
        15.0, validation_alias=AliasChoices("think_density", "think_hesitation_density_threshold"),
        description="Same, for thinking text; alias think_hesitation_density_threshold.")
    min_markers: int = Field(3, ge=1, description="Density fires only with at least this many markers.")
    response_cascade_k: int = Field(
        5, ge=2, validation_alias=AliasChoices("response_cascade_k", "cascade_threshold"),
        description="k cascade markers within the window; alias cascade_threshold.")
    think_cascade_k: int = Field(20, ge=2, description="Same, for thinking text.")
    cascade_window: int = Field(800, ge=1, description="Window of the cascade signal in chars.")
    response_repetition: float = Field(
        0.45, validation_alias=AliasChoices("response_repetition", "repetition_threshold"),
        description="Max n-gram repetition ratio (strict >); alias repetition_threshold.")
    think_repetition: float = Field(
        0.65, validation_alias=AliasChoices("think_repetition", "think_repetition_threshold"),
        description="Same, for thinking text; alias think_repetition_threshold.")
    ngram_size: int = Field(8, ge=2, description="n of the repetition n-grams.")
    min_ngram_words: int = Field(30, ge=1, description="Repetition needs this many words (x n chars for CJK).")
    check_agent_rows: bool = Field(True, description="Also check text turns of agent rows.")
    max_repeated_tool_calls: int = Field(
        4, ge=0, description="The same call, or cycle of up to 3 calls, with the same results N times in a row "
                             "is a loop (0 = off).")
    max_item_repeats: int = Field(10, ge=0, description="One list item or line this many times is a loop (0 = off).")
    check_list_heads: bool = Field(
        True, description="Drop a list whose item heads name one thing again and again in other words.")
    max_sentence_repeats: int = Field(
        4, ge=0, description="One sentence or line, or a block of up to 6, this many times in a row is a loop when "
                             "it fills item_repeat_share of the text (0 = off).")
    item_repeat_share: float = Field(0.5, gt=0, le=1, description="...and at least this share of all items.")
    max_paragraph_repeats: int = Field(
        3, ge=0, description="One paragraph of 30+ chars this many times in a row, word for word, is a loop "
                             "whatever its share (0 = off).")


Evidence = dict[str, Any]

# Quoted speech is a character's voice, not the assistant's: its "um, wait" are not counted.
_SPEECH_RE = re.compile(r'"[^"\n]*"|“[^”\n]*”|「[^」\n]*」|『[^』\n]*』|‘[^’\n]*’')
# A parenthesised list of short words ("(um, uh, so)", "（嗯、那个）") names words; it does not use them.
_WORD_LIST_RE = re.compile(r"[(（](?:[^()（）\n,，、]{1,15}[,，、]\s*)+[^()（）\n,，、]{1,15}[)）]")
# The speaker label of a script line: "SAM: Hmm, wait." / "민수: 음..." / "甲：嗯……".
_SPEAKER_RE = re.compile(r"^[ \t]*([^\s:：「」\"“]{1,20})[ \t]*[:：]", re.M)
_SCRIPT_MIN_LINES = 4
_FENCE_RE = re.compile(r"```.*?(?:```|\Z)", re.S)
_ITEM_SEPARATORS = (",", "，", "、", ";", "；")
_MARKER_RE = re.compile(r"^\s*(?:[-*•·+]|\d{1,3}[.)、:]|[（(]\d{1,3}[)）]|[a-zA-Z][.)]|[①-⑳])\s*")
_ITEM_STRIP = " \t.。!！?？:：-*•"
_REPETITION_CHECKS = ("repetition", "repeated_item", "repeated_sentence", "repeated_paragraph", "repeated_list_head")
_TAIL = itemgetter(slice(-2, None))
_RSTRIP = methodcaller("rstrip", _ITEM_STRIP)
_MAX_LOOP_PERIOD = 3  # cycles of up to this many distinct calls or sentences (A, B, A, B, ...) count as loops
# Sentence ends in every script, and line breaks; the terminator stays out of the unit. The
# lookahead changes no match (each starts with whitespace or a terminator, and \n is whitespace);
# it lets the engine reject most positions before trying the lookbehind.
_UNIT_SPLIT_RE = re.compile(r"(?=[\s。！？])(?:(?<=[.!?])\s+|[。！？\n]+)")
# The values of an answer key (single letters are never counted as items, so A-E are not listed).
_ANSWER_VALUES = frozenset({
    "true", "false", "yes", "no", "correct", "incorrect", "right", "wrong", "对", "错", "是", "否", "正确", "错误",
    "对的", "错的", "はい", "いいえ", "正しい", "誤り", "○", "×", "예", "아니요", "아니오", "네", "맞음", "틀림",
})
_MAX_BLOCK_LINES = 6  # a repeated block of up to this many sentences or lines
_UNIT_ENDS = ("\n", ". ", "! ", "? ", "。", "！", "？")
_UNIT_TAIL = methodcaller("__getitem__", slice(-6, None))
# A list marker or numbered label: "- ", "3. ", "Step 3:", "Q12:", "問3：", "第3步：" (not a number or a
# time of day: "1.5 kg" and "10:30" keep their digits).
_NUMBERED_LABEL_RE = re.compile(
    r"^\s*(?:[-*•·+]\s*|[a-zA-Z][.)]\s+|[（(]\d{1,3}[)）]\s*|[①-⑳]\s*)?"
    r"(?:(?:[^\s:：.)、\d]{1,12}\s?)?\d+[^\s:：.)、\d]{0,4}\s*[:：.)、](?!\d)\s*)?")
_STRIP_ITEM = methodcaller("strip", _ITEM_STRIP)
_UNMARK = partial(_MARKER_RE.sub, "")


def _narration(text: str) -> str:
    """The text in the assistant's own voice: quoted speech and listed words removed."""
    if '"' in text or not text.isascii():
        text = _SPEECH_RE.sub(" ", text)
    if "(" in text or "（" in text:
        text = _WORD_LIST_RE.sub(" ", text)
    return text


# The assistant talking about the piece it is supposed to write ("let me start over", "the opening is
# too plain", 我先想想该怎么开头, 書き出しを変えます, 처음부터 다시 쓸게요): hesitations around such talk are
# its own dithering, not a character's, even inside requested fiction.
_WRITING_TALK_RE = re.compile(
    r"\b(?:let\s+me\s+(?:think|start|begin|redo|rewrite|try)|I'?ll\s+(?:start|write|redo|rewrite|try)"
    r"|(?:maybe|should)\s+I\s+(?:start|write|begin|make\s+it)|start\s+over|that'?s\s+too\s+(?:simple|plain|generic|long|short)"
    r"|(?:the|this)\s+(?:opening|rhyme|first\s+line|beginning|ending|draft)\b)"
    r"|我(?:来|先|再|重新)(?:写|想想|想一下|换|构思|试)|开头|这个(?:版本|写法)|写成|太普通"
    r"|書き出し|冒頭|書き直|もう一度書|どう(?:書こう|始め)"
    r"|(?:써|작성해)\s*볼게|다시\s*(?:할게|쓸게|해\s*볼게|써)|처음부터\s*(?:다시|정리)|어떻게\s*시작|(?:이게|이건)\s*아니"
    r"|제목(?:도|을)\s*바꿔|(?:앞에서|아까)\s*[^.?!\n]{0,30}?(?:했나요|썼나요|했던가)"
    r"|\bdid\s+I\s+(?:say|call|write)\b|(?:前に|さっき)[^。？\n]{0,20}?(?:書きました|言いました)(?:っけ|か)|我(?:前面|刚才)(?:写|说)的?是",
    re.I,
)
_WRITING_TALK_MIN = 2

# The assistant throwing its draft away and starting the piece again ("scratch that, let me rewrite it",
# 换一个, 書き直します, 다시 쓸게요): three times over, it is going round, whatever the piece is.
_RESTART_RE = re.compile(
    # Case-sensitive, so the lookahead on the cues' first characters rules out most positions at once:
    # the English cues open a sentence ("Scratch that.", "Let me rewrite it.") or follow "I" or an interjection
    # ("Actually, let me start over", "Hmm, let me redo this").
    r"(?=[LlSI重换再还不書やも別다처改最説从])"
    r"(?:(?:[Ll]et\s+me\s+(?:redo|rewrite|restart|start\s+(?:over|again)|try\s+(?:again|that\s+again))"
    r"|Scratch\s+that|Start(?:ing)?\s+over|I'?ll\s+(?:redo|rewrite)\s+(?:it|that|this)|I'?ll\s+start\s+(?:over|again))\b"
    r"|重新(?:写|来|开始)|换一(?:个|句|种)|再换|还是不要了|不对[，,]"
    r"|書き直|やり直|もう一度書|別の(?:書き出し|案)に|(?:もう一度|改めて)[、,]?\s*最初から|最初から(?:説明し直|整理し直)"
    r"|説明し直|从头(?:开始|再来|说起)|重新(?:说明|解释|讲)"
    r"|다시\s*(?:쓸게|할게|써\s*볼게|시작할게)|처음부터\s*다시)"
)
_RESTART_MIN = 3

# Connectives that announce the same point again in other words ("in other words", 요컨대, 总之, つまり):
# an answer uses one, maybe two; four different ones are the reply restating itself in a loop.
_RESTATE_RE = re.compile(
    # Case-sensitive, as above: the English connectives open their sentence.
    r"(?=[ITSPABE换简总归说一也言要つ結ま다요한정결즉])"
    r"(?:(?:In\s+other\s+words|To\s+put\s+it\s+(?:another\s+way|simply)|In\s+short|In\s+a\s+nutshell"
    r"|To\s+sum\s+(?:it\s+)?up|In\s+summary|In\s+conclusion|Simply\s+put|Put\s+simply|All\s+in\s+all"
    r"|The\s+bottom\s+line\s+is|Bottom\s+line|Put\s+differently|Said\s+differently|Stated\s+simply"
    r"|That\s+is\s+to\s+say|In\s+essence|Basically(?=,)|Essentially(?=,))\b"
    r"|换句话说|换言之|简而言之|总而言之|总之|归根结底|说到底|一句话|也就是说"
    r"|言い換えると|言い換えれば|要するに|つまり|結論として|まとめると|一言で言えば|結局のところ"
    r"|다시\s*말해|요컨대|한마디로|정리하자면|정리하면|결론적으로|요약하면|즉[,\s]|결국)"
)
_RESTATE_MIN = 4


def _screen(*patterns: re.Pattern[str]) -> re.Pattern[str]:
    """One pattern matching where any of ``patterns`` matches, each written ``(?=[first chars])(?:...)``.

    The first characters are merged into one lookahead: joining the patterns with ``|`` as they are
    would test every lookahead at every position, twice as slow on the replies screened.
    """
    firsts, bodies = [], []
    for pattern in patterns:
        head, sep, body = pattern.pattern.partition("])")
        assert head.startswith("(?=[") and sep, "each pattern opens with a first-character lookahead"
        firsts.append(head[4:])
        bodies.append(body)
    return re.compile(f"(?=[{''.join(firsts)}])(?:{'|'.join(bodies)})")


# Either family's cues, for one screening pass over a reply.
_LOOP_CUE_RE = _screen(_RESTART_RE, _RESTATE_RE)
_LOOP_CUE_MIN_CHARS = 60  # shorter replies cannot hold three restarts or four restatements
_RESTATE_MIN_CHARS = 120  # four connectives and the points they restate take at least this much (CJK counted once)


def restatements(text: str) -> Evidence | None:
    """Evidence that the reply announces the same point again in at least four different wordings, or None."""
    if len(text) < _RESTATE_MIN_CHARS:
        return None
    found = {m.lower() for m in _RESTATE_RE.findall(text)}
    if len(found) < _RESTATE_MIN:
        return None
    return {"check": "restatements", "count": len(found), "cues": sorted(found)[:6], "window": text.strip()[-160:]}


def restarts(text: str) -> Evidence | None:
    """Evidence that the assistant's own voice (quotes removed) throws its draft away and starts again
    at least three times, or None."""
    if len(text) < _LOOP_CUE_MIN_CHARS or _RESTART_RE.search(text) is None:
        return None  # most replies: no cue at all, so no quote masking either
    found = _RESTART_RE.findall(_narration(text))
    if len(found) < _RESTART_MIN:
        return None
    return {"check": "restarts", "count": len(found), "cues": sorted(set(found))[:4], "window": text.strip()[:120]}


def talks_about_its_writing(text: str) -> bool:
    """True when the assistant's own voice (quotes removed) talks about writing the piece at least twice."""
    return len(_WRITING_TALK_RE.findall(_narration(text))) >= _WRITING_TALK_MIN


# A section header: a bold or # heading line, a short line closed by a colon, or a bracketed or bulleted
# title (【月曜日】, [Day 2], ■ 화요일).
_HEADER_RE = re.compile(r"^\s*(?:#{1,6}\s+\S.*|\*\*[^*\n]{1,40}\*\*[:：]?|[^\n]{1,30}[:：]"
                        r"|【[^】\n]{1,30}】|\[[^\]\n]{1,30}\]|[■□●◆◇▶▷◎]\s*[^\n]{1,30})\s*$")
_TEMPLATE_MIN_SECTIONS = 3


def templated_sections(text: str) -> bool:
    """True when the text is one body filled in under distinct headers (周一, 周二, ...; Day 1, Day 2, ...):
    at least three sections with different headers, each at least half made of lines that three or more
    sections share (a day may add its own line), the shared lines holding a third of the text or more."""
    headers: list[str] = []
    bodies: list[list[str]] = []
    for line in text.splitlines():
        if _HEADER_RE.match(line):
            headers.append(line.strip())
            bodies.append([])
        elif bodies and line.strip():
            bodies[-1].append(" ".join(line.split()))
    if len(headers) < _TEMPLATE_MIN_SECTIONS or len(set(headers)) < len(headers):
        return False
    seen = Counter(line for lines in bodies for line in set(lines))
    shared = {line for line, n in seen.items() if n >= _TEMPLATE_MIN_SECTIONS}
    filled = [lines for lines in bodies if lines and 2 * sum(line in shared for line in lines) >= len(lines)]
    covered = sum(len(line) for lines in filled for line in lines if line in shared)
    return len(filled) >= _TEMPLATE_MIN_SECTIONS and 3 * covered >= len(text)


def find_cycle(keys: Sequence[Hashable], min_repeats: int, max_period: int) -> tuple[int, int, int, int] | None:
    """The first run of ``keys`` that repeats a block of up to ``max_period`` keys ``min_repeats``
    times in a row: ``(period, start, end, repeats)`` over the whole run (``end`` exclusive), or None.

    Periods are tried shortest first, so ``A A A A`` is period 1, not period 2.
    """
    for period in range(1, max_period + 1):
        run = 0
        for j in range(period, len(keys) + 1):
            if j < len(keys) and keys[j] == keys[j - period]:
                run += 1
                continue
            if run // period + 1 >= min_repeats:
                return period, j - run - period, j, run // period + 1
            run = 0
    return None


_STUCK_SENTENCE_RUN = 6


def repeated_units(text: str, *, min_repeats: int = 4, min_share: float = 0.5) -> Evidence | None:
    """Evidence that one sentence or line (or a block of up to six) repeats ``min_repeats`` times in a row
    and fills at least ``min_share`` of the text, or None.

    Short replies that are nothing but one sentence again and again have too few words for the n-gram
    ratio; this counts in sentences, split on the terminators of every script.
    """
    if not min_repeats or sum(map(text.count, _UNIT_ENDS)) < min_repeats - 1:
        return None  # too few sentences or lines to repeat (most texts): counting is cheaper than splitting
    if "```" in text:
        text = _FENCE_RE.sub(" ", text)
    parts = _UNIT_SPLIT_RE.split(text)
    # Cheap screen in C: a repeated unit (or every unit of a repeated block) ends the same way each
    # time, whatever its label, so without min_repeats equal tails nothing repeats that often.
    tails = Counter(map(_UNIT_TAIL, parts))
    tails.pop("", None)
    if not tails or tails.most_common(1)[0][1] < min_repeats:
        return None
    # Each distinct part is keyed once: texts that get this far repeat parts (a list of flights,
    # a stuck reply), so about half of them are seen again.
    keys: dict[str, str | None] = {}
    for part in parts:
        if part not in keys:
            unit = _unit_key(part)
            keys[part] = unit if _meaningful_unit(unit) else None
    units = [u for u in map(keys.__getitem__, parts) if u is not None]
    if len(units) < min_repeats:
        return None
    found = find_cycle(units, min_repeats, _MAX_BLOCK_LINES)
    if found is None:
        return None
    period, start, end, repeats = found
    covered = sum(map(len, units[start:end]))
    # One sentence said again and again in a row is stuck however much good text came before it
    # (an answer that ends "坚持就是胜利。" eight times); a shorter run must fill the text.
    if covered < min_share * sum(map(len, units)) and not (period == 1 and repeats >= _STUCK_SENTENCE_RUN):
        return None
    return {"check": "repeated_sentence", "unit": " / ".join(units[start:start + period])[:120],
            "period": period, "count": repeats, "units": len(units), "share": round(covered / sum(map(len, units)), 3)}


_PARAGRAPH_SPLIT_RE = re.compile(r"\n[ \t]*\n")
_PARAGRAPH_MIN_CHARS = 30
_PARAGRAPH_MIN_RUN = 3


def repeated_paragraph(text: str, *, min_run: int = _PARAGRAPH_MIN_RUN) -> Evidence | None:
    """Evidence that one paragraph is said ``min_run`` times in a row, word for word (the last copy may be
    cut off), or None. A generation that does not stop repeats its closing paragraph, however much good
    text came before it, so no share of the text is needed."""
    if text.count("\n\n") < min_run - 1:
        return None  # too few paragraph breaks (most texts)
    paras = [" ".join(p.split()) for p in _PARAGRAPH_SPLIT_RE.split(text)]
    run, best, at = 1, 1, 0
    for i in range(1, len(paras)):
        same = paras[i] == paras[i - 1] or (i == len(paras) - 1 and len(paras[i]) >= _PARAGRAPH_MIN_CHARS
                                            and paras[i - 1].startswith(paras[i]))
        run = run + 1 if same and len(paras[i - 1]) >= _PARAGRAPH_MIN_CHARS else 1
        if run > best:
            best, at = run, i
    if best < min_run:
        return None
    return {"check": "repeated_paragraph", "unit": paras[at - 1][:120], "count": best, "paragraphs": len(paras)}


def _unit_key(part: str) -> str:
    # List markers and numbered labels do not make a sentence new: "Step 3: check the cable" repeats
    # "Step 2: check the cable", and what follows "Q3:" is the unit ("Q3: yes" is just "yes"). Other
    # numbers stay: rows of a table differ by them.
    unit = _NUMBERED_LABEL_RE.sub("", part)
    return " ".join(unit.split()).lower()


def _meaningful_unit(unit: str) -> bool:
    # A closed-vocabulary answer ("true", "yes", "b") repeats by nature; a sentence does not.
    if not any(c.isalpha() for c in unit):
        return False
    return len(unit.split()) >= 2 if unit.isascii() else len(unit) >= 4  # はい, いいえ, 是的, 아니요: closed values


# A list item's head: its bold lead, else what comes before its first separator.
_BOLD_HEAD_RE = re.compile(r"^\*\*(.+?)\*\*")
_HEAD_END_RE = re.compile(r"[:：—–（(]|\s-\s")
_LATIN_WORD_RE = re.compile(r"[a-z][a-z']+")
_HANGUL_WORD_RE = re.compile(r"[가-힣]{2,}")
_CJK_RUN_RE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]{2,}")
_HEAD_STOPWORDS = frozenset({
    "the", "and", "for", "with", "your", "you", "from", "into", "that", "this", "are", "how", "what", "its", "use",
    "can", "get", "more", "not", "all", "our", "out"
})
# Korean verb endings are shared by any list of tips or steps (kana-only pairs are skipped in _head_tokens).
_HEAD_STOP_BIGRAMS = frozenset({
    "세요", "하세", "해요", "니다", "습니", "하기", "하는", "하고", "에서", "으로", "합니", "드세", "보세", "주세"
})
# A schedule or a procedure repeats its unit word in every head (Day 1, Step 2, 第3天, 2日目, 1일차).
_ENUMERATOR_TOKENS = frozenset({
    "day", "days", "week", "weeks", "step", "steps", "part", "chapter", "round", "level", "phase", "month", "stage",
    "lesson", "session", "option", "tip", "idea"
}) | {"日目", "第一", "일차", "단계", "주차"}
_MIN_LIST_ITEMS = 6
_CHECKBOX_RE = re.compile(r"^\[[ xX]?\]\s*")
_SHORT_ITEM = 30  # an item this short (CJK characters weigh double) names its thing whole
_HEAD_SHARE_FIFTHS = 3  # most item heads: three in five


def _head_tokens(head: str) -> list[str]:
    """The distinct content words (and CJK pairs) of a list item's head, sorted: counted across items, the
    ties of a most-common list then come out the same in every process (a set's order changes with the
    string hash seed, and with it the words an evidence names)."""
    return sorted(_head_token_set(head))


def _head_token_set(head: str) -> set[str]:
    low = head.lower()
    tokens = {w.rstrip("'s") for w in _LATIN_WORD_RE.findall(low) if len(w) >= 3} - _HEAD_STOPWORDS
    if head.isascii():
        return tokens
    for word in _HANGUL_WORD_RE.findall(head):
        tokens.update(word[i:i + 2] for i in range(len(word) - 1))
    for run in _CJK_RUN_RE.findall(head):
        # Pure kana pairs are grammar (です, ます); a pair with a kanji or katakana names something.
        tokens.update(run[i:i + 2] for i in range(len(run) - 1)
                      if not all("\u3040" <= c <= "\u309f" for c in run[i:i + 2]))
    return tokens - _HEAD_STOP_BIGRAMS


def _item_head(item: str) -> tuple[str, bool]:
    """(the item's head, whether the head is the thing itself: a bold lead or a short item), or ("", False).

    A head before a colon may be a label ("Note:", "확인:") that repeats by design; a long item
    without one is a sentence, and sentences share words by nature."""
    item = _CHECKBOX_RE.sub("", item.strip())
    bold = _BOLD_HEAD_RE.match(item)
    if bold:
        return bold.group(1), True
    end = _HEAD_END_RE.search(item)
    if end:
        # A parenthesis qualifies the thing named before it ("Passport (valid 6 months)"); a colon
        # or a dash may follow a label.
        return item[:end.start()][:60], end.group(0) in "（("
    return (item, True) if len(item) + cjk_count(item) <= _SHORT_ITEM else ("", False)


def _chained(tokens: list[str]) -> int:
    """How many words ``tokens`` make: CJK pairs that overlap (学生 + 生们) are one word."""
    words = len(tokens)
    pairs = {t for t in tokens if len(t) == 2 and not t.isascii()}
    for t in pairs:
        if any(u[0] == t[1] for u in pairs if u != t):
            words -= 1
    return words


def repeated_list_head(text: str, request: str = "") -> Evidence | None:
    """Evidence that one thing fills a list under different words, or None.

    A stuck list names the same thing item after item, each with a new line of text ("Build a
    blanket fort", "Blanket fort movie time", "Fort building challenge"; 浅草寺 seven times in
    ten sights). Two content words (or CJK pairs) shared by most item heads is that; one is a
    template ("Visit the Louvre", "Visit Versailles"). Words of the request are the topic, not
    a repeat (the Harry Potter books); unit words (Day, Step, 第3天) are a schedule.
    """
    if text.count("\n") < _MIN_LIST_ITEMS - 1:
        return None
    lines = LIST_ITEM_RE.findall(text)
    if len(lines) < _MIN_LIST_ITEMS:
        return None
    items = list(map(_item_head, lines))
    need = max(4, -(-_HEAD_SHARE_FIFTHS * len(items) // 5))  # ceil(3n / 5) in integers
    heads = [h for h, _ in items if h]
    if len(heads) < need:
        return None
    asked = request.lower()
    window = " / ".join(heads[:4])[:120]
    # The same thing named word for word (labels aside).
    same = Counter(" ".join(h.lower().strip(_ITEM_STRIP).split()) for h, itself in items if itself)
    if same:
        head, k = same.most_common(1)[0]
        if k >= need and head and head not in asked and head not in _ANSWER_VALUES:
            return {"check": "repeated_list_head", "words": [head], "count": k, "items": len(items), "window": window}
    # The same thing in other words: two words of it in most heads.
    counts: Counter[str] = Counter()
    for h in heads:
        counts.update(_head_tokens(h))
    shared = [t for t, n in counts.most_common() if n >= need and t not in asked]
    if _chained(shared) < 2 or any(t in _ENUMERATOR_TOKENS for t, n in counts.items() if n >= need):
        return None
    return {"check": "repeated_list_head", "words": shared[:4], "count": counts[shared[0]], "items": len(items),
            "window": window}


# A list of different things asked for, each item saying the same one in new words: one content word
# (or CJK pair) of the whole item in four items of five, when the user asked for distinct ones.
_PARAPHRASE_MIN_ITEMS = 5
_PARAPHRASE_SHARE_FIFTHS = 4
# Mean item length (CJK characters weigh double) up to which an item is one point, not an explanation.
_PARAPHRASE_ITEM_WEIGHT = 45
# Characters after a shared word that, the same in most items, make it a template's fixed part.
_TEMPLATE_CONTEXT = 6


def _templated(token: str, items: list[str], need: int) -> bool:
    """Whether ``token`` is a template's fixed part: the word most items open with ("Visit the Louvre",
    "Visit Versailles"), or one followed by the same words in most items ("... - worth it.")."""
    lows = [item.lower().lstrip("*#_ ") for item in items]
    if sum(low.startswith(token) for low in lows) * 2 >= len(items):
        return True
    end = len(token) + _TEMPLATE_CONTEXT
    # A word that ends its item has no fixed part after it ("가족용 텐트", "방수 텐트").
    after = Counter(ctx for low in lows if (i := low.find(token)) >= 0 and (ctx := low[i + len(token):i + end].strip()))
    return bool(after) and after.most_common(1)[0][1] >= need


def paraphrased_items(text: str, request: str) -> Evidence | None:
    """Evidence that a list of things the user asked to differ repeats one of them in other words, or None.

    Only a request for several different things (``asks_for_variety``) is judged: a schedule, a
    flight list or a recipe shares its words by nature. Words of the request are its topic.
    """
    lines = LIST_ITEM_RE.findall(text)
    if len(lines) < _PARAPHRASE_MIN_ITEMS or sum(map(len, lines)) > _PARAPHRASE_ITEM_WEIGHT * len(lines):
        return None  # items that explain themselves at length share their grammar and framing words
    if sum(map(text_weight, lines)) > _PARAPHRASE_ITEM_WEIGHT * len(lines) or not asks_for_variety(request):
        return None
    need = -(-_PARAPHRASE_SHARE_FIFTHS * len(lines) // 5)  # ceil(4n / 5) in integers
    counts: Counter[str] = Counter()
    for line in lines:
        # A pair with a kana in it is grammar as often as not (を使, 家は); kanji and katakana name things.
        counts.update(t for t in _head_tokens(line) if not any("\u3040" <= c <= "\u309f" for c in t))
    # The topic is what the request names, or what the reply's lead-in names ("jokes about turkeys:",
    # "预算计划"): every item may carry it. (A closing line often restates the one point, so it is no topic.)
    first = LIST_ITEM_RE.search(text)
    asked = f"{request}\n{text[:first.start() if first else 0]}".lower()
    shared = [t for t, n in counts.most_common() if n >= need and t not in asked and t not in _ENUMERATOR_TOKENS
              and not _templated(t, lines, need)]
    if not shared:
        return None
    return {"check": "paraphrased_list", "words": shared[:4], "count": counts[shared[0]], "items": len(lines),
            "window": " / ".join(line[:40] for line in lines[:4])[:160]}


_TABLE_ROW_RE = re.compile(r"^[ \t]*\|(.+)\|[ \t]*$", re.M)
_TABLE_RULE_RE = re.compile(r"^[\s|:\-]+$")
# A comparison needs this many data rows and compared columns before identical cells mean anything.
_TABLE_MIN_ROWS = 3
_TABLE_MIN_COLUMNS = 3


def identical_columns(text: str) -> Evidence | None:
    """Evidence that a table compares things without telling them apart: in every data row, every
    column after the first holds the same cell ("高性能なカメラ" under all three phones), or None."""
    if text.count("|") < (_TABLE_MIN_ROWS + 1) * (_TABLE_MIN_COLUMNS + 1):
        return None  # most replies: no table this big
    rows = [[c.strip() for c in m.group(1).split("|")] for m in _TABLE_ROW_RE.finditer(text)]
    rows = [r for r in rows if not _TABLE_RULE_RE.match("|".join(r))]
    if len(rows) < _TABLE_MIN_ROWS + 1:
        return None
    header, data = rows[0], rows[1:]
    if len(header) < _TABLE_MIN_COLUMNS + 1 or len(set(header[1:])) < len(header[1:]):
        return None  # the columns must name different things to be compared
    # A cell that says something (two letters at least): a checklist's empty boxes or ticks are a form.
    if any(len(r) != len(header) or len(set(r[1:])) != 1 or sum(map(str.isalpha, r[1])) < 2 for r in data):
        return None
    return {"check": "identical_columns", "columns": header[1:], "rows": len(data),
            "window": " | ".join(data[0])[:120]}


_FENCED_RE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
# One code block this long or longer, shown this many times, is the same example again, not a new one.
_CODE_BLOCK_MIN_CHARS = 20
_CODE_BLOCK_REPEATS = 3


def repeated_code_block(text: str) -> Evidence | None:
    """Evidence that one code block is shown again and again (the same snippet under each new heading), or None."""
    if text.count("```") < 2 * _CODE_BLOCK_REPEATS:
        return None  # most replies: fewer fences than a repeat needs
    blocks = Counter(" ".join(b.split()) for b in _FENCED_RE.findall(text))
    block, n = blocks.most_common(1)[0] if blocks else ("", 0)
    if n < _CODE_BLOCK_REPEATS or len(block) < _CODE_BLOCK_MIN_CHARS:
        return None
    return {"check": "repeated_code_block", "repeats": n, "window": block[:120]}


def is_script(text: str) -> bool:
    """True when ``text`` is a script: several speaker-labelled lines, two speakers at least, one
    speaking more than once (dialogue alternates; a list of ``Key: value`` lines does not)."""
    speakers = Counter(m.group(1) for m in _SPEAKER_RE.finditer(text))
    return sum(speakers.values()) >= _SCRIPT_MIN_LINES and len(speakers) >= 2 and max(speakers.values()) >= 2


def _countable(item: str) -> bool:
    # Table rows and markup tokens (<|im_start|>) are left to the other checks.
    return len(item) >= 2 and item[0] not in "|<[" and any(c.isalpha() for c in item)


# At most this many different items repeating in turn still make one stuck list (more is a table) ...
_MAX_CYCLING_ITEMS = 3
# ... when they are nearly the whole list (a schedule repeats its entries between other lines: month names).
_CYCLE_SHARE = 0.8


def repeated_item(text: str, *, min_repeats: int = 10, min_share: float = 0.5) -> Evidence | None:
    """Evidence that one list item (or line, or comma-separated entry) fills the text, or None.

    Items are lines and comma/semicolon-separated entries outside code, with list markers
    (``1.``, ``-``, ``①``) stripped, so "1. Banana / 2. Banana / ..." is one item repeated even
    though no two lines are equal. Code is left out: repeated ``pass`` or ``}`` lines are normal.
    """
    if not min_repeats or len(text) < 2 * min_repeats:
        return None
    if "```" in text:
        text = _FENCE_RE.sub("\n", text)
    elif text.count("\n") + sum(map(text.count, _ITEM_SEPARATORS)) + 1 < min_repeats:
        return None  # too few items: counting them is cheaper than splitting (most texts)
    # str.replace + split run in C, several times faster than a regex split or translate.
    for sep in _ITEM_SEPARATORS:
        if sep in text:
            text = text.replace(sep, "\n")
    raw = text.split("\n")
    if len(raw) < min_repeats:
        return None
    # Cheap screen in C: equal items share their last two characters (list markers only change
    # the head), so without min_repeats equal tails no item can repeat that often.
    tails = Counter(map(str.lower, map(_TAIL, map(_RSTRIP, raw))))
    tails.pop("", None)
    if not tails or tails.most_common(1)[0][1] < min_repeats:
        return None
    # Every item is counted in C first; then each distinct item is judged once. A Counter keeps
    # first-seen order, so the most frequent item is still the first one seen among equals.
    seen = Counter(map(str.lower, map(_STRIP_ITEM, map(_UNMARK, raw))))
    counts = {item: k for item, k in seen.items() if _countable(item)}
    if not counts:
        return None
    total = sum(counts.values())
    item, k = max(counts.items(), key=itemgetter(1))
    if k < min_repeats or _categorical(counts, item, k):
        return None
    if k >= min_share * total:
        return {"check": "repeated_item", "item": item[:120], "count": k, "items": total}
    # A few items taking turns ("1. 高兴 2. 开心 3. 快乐 4. 高兴 ..."): a cycle is as stuck as one item.
    cycle = [(i, n) for i, n in counts.items() if n >= min_repeats]
    if len(cycle) > _MAX_CYCLING_ITEMS or sum(n for _, n in cycle) < _CYCLE_SHARE * total or \
            all(i in _ANSWER_VALUES for i, _ in cycle):
        return None
    return {"check": "repeated_items", "items_repeated": [i[:40] for i, _ in cycle], "count": k, "items": total}


def _categorical(counts: dict[str, int], item: str, k: int) -> bool:
    """True when the list is answers from a closed set (true/false, yes/no, 对/错, はい/いいえ, 예/아니요,
    A-E) with more than one of them used: an answer key, not one item stuck on repeat. A header or
    a closing line may stand beside the answers."""
    if item not in _ANSWER_VALUES:
        return False
    others = sum(n for value, n in counts.items() if value not in _ANSWER_VALUES)
    runner_up = max((n for value, n in counts.items() if value != item and value in _ANSWER_VALUES), default=0)
    return others <= 2 and runner_up >= max(2, k / 10)


def ngram_repetition(text: str, *, n: int = 8, min_words: int = 30) -> float:
    """1 - unique/total over contiguous n-grams (words, or chars for CJK text); 0 if too short."""
    tokens = _tokens(text, n, min_words)
    if tokens is None:
        return 0.0
    return 1.0 - _distinct_grams(tokens, n) / (len(tokens) - n + 1)


def _tokens(text: str, n: int, min_words: int) -> str | list[str] | None:
    # Too short for either token kind: min_words words need 2 * min_words - 1 characters.
    if len(text) < min(2 * min_words - 1, min_words * n):
        return None
    head = text[:500]
    if not head.isascii() and cjk_ratio(head) > 0.3:  # ASCII has no CJK: skip the regex
        chars = text.replace(" ", "").replace("\n", "")
        return chars if len(chars) >= min_words * n else None
    words = text.split()
    return words if len(words) >= min_words else None


def _grams(tokens: str | list[str], n: int, start: int, stop: int) -> set[Any]:
    """The distinct n-grams starting at positions start..stop-1."""
    if isinstance(tokens, str):
        return {tokens[i:i + n] for i in range(start, stop)}  # a comprehension beats a generator here
    return set(zip(*(tokens[start + i:stop + i] for i in range(n))))


_CODE_BITS = 16
_PER_KEY = 64 // _CODE_BITS


def _token_codes(tokens: str | list[str]) -> np.ndarray | None:
    """Each token as an integer below 2**16 (a UTF-16 unit, or a word's first-seen id); None if one is not."""
    if isinstance(tokens, str):
        units = np.frombuffer(tokens.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)
        return units.astype(np.uint64) if len(units) == len(tokens) else None  # astral text: the set path
    if len(tokens) >= 1 << _CODE_BITS:
        return None
    ids: dict[str, int] = {}
    # setdefault keeps a word's first id, so equal words get equal codes (all in C).
    return np.fromiter(map(ids.setdefault, tokens, itertools.count()), dtype=np.uint64, count=len(tokens))


def _gram_keys(codes: np.ndarray, n: int) -> list[np.ndarray]:
    """The n-grams of ``codes`` as columns of 64-bit keys, four codes per key: equal grams, equal keys."""
    m = len(codes) - n + 1
    keys = []
    for start in range(0, n, _PER_KEY):
        key = codes[start:start + m].copy()
        for j in range(start + 1, min(n, start + _PER_KEY)):
            key <<= np.uint64(_CODE_BITS)
            key |= codes[j:j + m]
        keys.append(key)
    return keys


def _groups(keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(positions sorted by gram, stably; True where a new gram starts in that order)."""
    order = np.lexsort(keys)
    new = np.zeros(len(order), dtype=bool)
    new[0] = True
    for key in keys:
        ranked = key[order]
        new[1:] |= ranked[1:] != ranked[:-1]
    return order, new


def _count_distinct(codes: np.ndarray, n: int) -> int:
    keys = _gram_keys(codes, n)
    if len(keys) == 1:
        ranked = np.sort(keys[0])
        return 1 + int(np.count_nonzero(ranked[1:] != ranked[:-1]))
    return int(np.count_nonzero(_groups(keys)[1]))


def _distinct_grams(tokens: str | list[str], n: int) -> int:
    codes = _token_codes(tokens) if len(tokens) >= n else None
    if codes is None:
        return len(_grams(tokens, n, 0, len(tokens) - n + 1))
    return _count_distinct(codes, n)


def repetition_exceeds(text: str, threshold: float, *, n: int = 8, min_words: int = 30) -> bool:
    """True if the n-gram repetition ratio is over ``threshold``."""
    tokens = _tokens(text, n, min_words)
    if tokens is None:
        return False
    total = len(tokens) - n + 1
    # Grams starting with distinct tokens are distinct, so unique >= distinct tokens - (n - 1):
    # when even that bound cannot exceed the threshold, skip building the n-grams. It settles
    # most word texts; CJK texts reuse few characters, so for them the k-gram bound goes first.
    codes = _token_codes(tokens) if total > 0 and isinstance(tokens, str) else None
    if codes is None:
        if 1.0 - (len(set(tokens)) - n + 1) / total <= threshold:
            return False
        codes = _token_codes(tokens) if total > 0 and isinstance(tokens, list) else None
    if codes is None:
        return _repetition_exceeds_sets(tokens, n, total, threshold)
    # The same bound from k-grams (k <= 4: one exact 64-bit key each): grams whose first k
    # tokens differ are distinct, so unique >= distinct k-grams - (n - k); it settles most texts.
    k = min(n, _PER_KEY)
    distinct = _count_distinct(codes, k) - (n - k)
    if k < n and 1.0 - distinct / total > threshold:
        distinct = _count_distinct(codes, n)
    return 1.0 - distinct / total > threshold


def _repetition_exceeds_sets(tokens: str | list[str], n: int, total: int, threshold: float) -> bool:
    # The grams of a head part are a subset of all grams: when they alone keep the ratio at
    # or under the threshold (most texts), the rest is never built.
    head = max(0, min(total, int((1.05 - threshold) * total) + 1))
    seen = _grams(tokens, n, 0, head)
    if 1.0 - len(seen) / total <= threshold:
        return False
    seen |= _grams(tokens, n, head, total)
    return 1.0 - len(seen) / total > threshold


def _cascade_span(text: str, low: str, k: int, window: int) -> tuple[int, int] | None:
    starts = count_cascade_starts(text, low)
    for i in range(len(starts) - k + 1):
        if starts[i + k - 1] - starts[i] <= window:
            return starts[i], starts[i + k - 1]
    return None


def _top_ngram(text: str, n: int, min_words: int) -> str:
    """The most repeated n-gram, as text (evidence of a repetition drop); ties go to the earliest."""
    tokens = _tokens(text, n, min_words)
    if tokens is None:
        return ""
    codes = _token_codes(tokens) if len(tokens) >= n else None
    if codes is None:
        grams = Counter(tokens[i:i + n] if isinstance(tokens, str) else tuple(tokens[i:i + n])
                        for i in range(len(tokens) - n + 1))
        gram, _ = grams.most_common(1)[0]
        return gram if isinstance(gram, str) else " ".join(gram)
    order, new = _groups(_gram_keys(codes, n))
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, len(order)))
    # A stable sort puts each gram's first position first in its group: among the most
    # frequent grams, the one seen first (as Counter.most_common picks it).
    first = order[starts[counts == counts.max()]].min()
    top = tokens[first:first + n]
    return top if isinstance(top, str) else " ".join(top)


def _call_identity(call: dict[str, Any]) -> Any:
    """A call's name and arguments, the arguments decoded so spacing and key order do not matter."""
    fn = call.get("function")
    if not isinstance(fn, dict):
        return fn
    args = fn.get("arguments")
    if isinstance(args, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            args = orjson.loads(args)
    return [fn.get("name"), args]


def _call_turns_at_most(messages: list[Any]) -> int:
    """An upper bound of ``len(_tool_steps(messages))``: assistant turns with a truthy ``tool_calls``."""
    # A step needs normalize_tool_calls to return a non-empty list, which a falsy value never gives.
    return sum(1 for m in messages if isinstance(m, dict) and m.get("tool_calls") and m.get("role") == "assistant")


def _name_of(call: dict[str, Any]) -> Any:
    """The head of ``_call_identity(call)`` (the name), found without decoding the arguments."""
    fn = call.get("function")
    if isinstance(fn, dict):
        return fn.get("name")
    return fn[0] if isinstance(fn, (list, tuple)) and fn else fn


def _call_names(messages: list[Any]) -> list[bytes]:
    """Per step of ``_tool_steps``, in order, the names of its calls: equal step keys, equal names."""
    names = []
    for a in messages:
        if not isinstance(a, dict) or a.get("role") != "assistant":
            continue
        calls = normalize_tool_calls(a.get("tool_calls"))
        if calls:
            names.append(orjson.dumps([_name_of(c) for c in calls], option=orjson.OPT_SORT_KEYS))
    return names


def _repeated_parallel_call(messages: list[Any], limit: int) -> Evidence | None:
    """One assistant turn emitting the same call (same name, same arguments) ``limit`` times or more:
    parallel calls that repeat one another fetch nothing new, so the turn is stuck as a loop is."""
    for i, a in enumerate(messages):
        if not isinstance(a, dict) or a.get("role") != "assistant":
            continue
        raw = a.get("tool_calls")
        if not isinstance(raw, list) or len(raw) < limit:
            continue  # most turns: fewer calls than a repeat needs
        calls = normalize_tool_calls(raw) or []
        counts = Counter(orjson.dumps(_call_identity(c), option=orjson.OPT_SORT_KEYS) for c in calls)
        key, repeats = counts.most_common(1)[0] if counts else (b"", 0)
        if repeats >= limit:
            return {"check": "parallel_repeat", "repeats": repeats, "calls": len(calls), "message_index": i,
                    "window": key.decode()[:120]}
    return None


def _tool_steps(messages: list[Any]) -> list[tuple[int, bytes, str | None]]:
    """Each assistant turn with tool calls: (its index, its calls and their results as one key, first name).

    The results are the tool messages that follow the turn; text turns between calls do not
    break a loop. A row that ends on a call keys that last step on its calls alone.
    """
    steps: list[tuple[int, bytes, str | None]] = []
    for i, a in enumerate(messages):
        if not isinstance(a, dict) or a.get("role") != "assistant":
            continue
        calls = normalize_tool_calls(a.get("tool_calls"))
        if not calls:
            continue
        results = []
        for m in itertools.islice(messages, i + 1, None):
            if not isinstance(m, dict) or m.get("role") != "tool":
                break
            results.append(" ".join(message_text(m.get("content")).split()))
        fn = calls[0].get("function")
        name = fn.get("name") if isinstance(fn, dict) else None
        key = orjson.dumps([[_call_identity(c) for c in calls], results], option=orjson.OPT_SORT_KEYS)
        steps.append((i, key, name))
    return steps


class DeadLoopFilter(ParamStep[DeadLoopParams]):
    """Drop rows with a stuck assistant turn or a repeated tool-call loop (``dead_loop``)."""

    Params = DeadLoopParams

    def process(self, rows: list[Row]) -> StepOutput:
        """Keep rows whose assistant turns are not stuck; a drop carries what fired as evidence."""
        kept, dropped = [], []
        for row in rows:
            msgs = row.get("messages")
            found = self.find_stuck(msgs) if isinstance(msgs, list) else None
            if found is not None:
                dropped.append(self.drop(row, "dead_loop", found))
            else:
                kept.append(row)
        return kept, dropped

    def is_stuck_row(self, messages: list[Any]) -> bool:
        """True if any assistant turn is stuck, or a tool call loops."""
        return self.find_stuck(messages) is not None

    def find_stuck(self, messages: list[Any], *, agent: bool | None = None,
                   texts: list[str] | None = None) -> Evidence | None:
        """Evidence of the first stuck assistant turn or tool-call loop, or None.

        ``agent`` and ``texts`` (each message's text) may come precomputed from a fused scan.
        """
        if agent is None:
            agent = is_agent_row(messages)
        if agent and not self.params.check_agent_rows:
            return None
        if agent:
            loop = self._tool_loop(messages)
            if loop is not None:
                return loop
        user: Any = None
        for i, m in enumerate(messages):
            if not isinstance(m, dict):
                continue
            if m.get("role") == "user":
                user = m.get("content")
            elif m.get("role") == "assistant":
                text = texts[i] if texts is not None else None
                found = self.stuck_evidence(m, text=text)
                if found is None and self.params.check_list_heads:
                    found = self._list_head(m, text, user)
                # Only a turn that hesitates asks whether fiction was requested (most never do), or
                # is itself a script: characters hesitating are not the assistant (though a closed
                # question, "What is 2 + 2?", is never answered by a script).
                request = message_text(user)[:REQUEST_HEAD_CHARS] if found is not None else ""
                own = text if text is not None else message_text(m.get("content")) if found is not None else ""
                if found is not None and found["check"] in ("hesitation", "cascade") and (
                        asks_for_fiction(request) or (not closed_question(request) and is_script(own))) \
                        and not talks_about_its_writing(own):
                    found = self.stuck_evidence(m, fiction=True, text=text)
                # Repetition the user asked for ("write it ten times") is the answer, not a loop.
                # So is one body filled in under each day's header when every day was asked for.
                if found is not None and found["check"] in _REPETITION_CHECKS and (
                        asks_for_repetition(request) or (asks_for_each_period(request) and templated_sections(
                            text if text is not None else message_text(m.get("content"))))):
                    found = None
                if found is not None:
                    return {**found, "message_index": i}
        return None

    @staticmethod
    def _list_head(msg: dict[str, Any], text: str | None, user: Any) -> Evidence | None:
        own = text if text is not None else message_text(msg.get("content"))
        if own.count("\n") < _PARAPHRASE_MIN_ITEMS - 1:
            return None  # too few lines for a list long enough (most replies)
        response = split_think(own)[1]
        request = message_text(user)[:REQUEST_HEAD_CHARS]
        # Judged without the request first: words of the request are excused only in the few lists
        # that repeat a thing at all.
        found = repeated_list_head(response, request) if repeated_list_head(response) is not None else None
        if found is None:
            found = paraphrased_items(response, request)
        if found is None:
            found = identical_columns(response)
        if found is None:
            found = repeated_code_block(response)
        return None if found is None else {**found, "part": "response"}

    def _tool_loop(self, messages: list[Any]) -> Evidence | None:
        limit = self.params.max_repeated_tool_calls
        if limit and (fanned := _repeated_parallel_call(messages, limit)) is not None:
            return fanned
        if not limit or _call_turns_at_most(messages) < limit:
            # Exact: find_cycle needs min_repeats keys at least, and every step is a turn counted here.
            return None
        if find_cycle(_call_names(messages), limit, _MAX_LOOP_PERIOD) is None:
            # Exact: equal steps make equal calls, so a loop of steps is a loop of their names too.
            return None
        steps = _tool_steps(messages)
        # A loop is the agent learning nothing: the same call (or a short cycle of calls) answered
        # the same way again and again. Polling whose answers change is progress, not a loop.
        found = find_cycle([key for _, key, _ in steps], limit, _MAX_LOOP_PERIOD)
        if found is None:
            return None
        period, start, end, repeats = found
        index, key, name = steps[end - 1]
        return {"check": "tool_loop", "call": name, "repeats": repeats, "period": period,
                "message_index": index, "window": key.decode()[:120]}

    def is_stuck_message(self, msg: dict[str, Any], *, fiction: bool = False) -> bool:
        """True if the think part or the response part of one assistant turn is stuck."""
        return self.stuck_evidence(msg, fiction=fiction) is not None

    def stuck_evidence(self, msg: dict[str, Any], *, fiction: bool = False,
                       text: str | None = None) -> Evidence | None:
        """Evidence that the think or response part of one assistant turn is stuck, or None.

        ``fiction``: the user asked for a story, dialogue or a voice (or the turn is a script), so
        hesitations are the characters', not the assistant's: only repetition counts.
        """
        think, response = split_think(message_text(msg.get("content")) if text is None else text)
        if not think:
            think = reasoning_of(msg).strip()
        p = self.params
        if len(response) >= _LOOP_CUE_MIN_CHARS and _LOOP_CUE_RE.search(response) is not None:  # one pass, both
            found_restarts = restarts(response) or restatements(response)
            if found_restarts is not None:
                return {**found_restarts, "part": "response"}
        found = self._stuck(think, p.think_density, p.think_cascade_k, p.think_repetition, fiction)
        if found is not None:
            return {**found, "part": "think"}
        found = self._stuck(response, p.response_density, p.response_cascade_k, p.response_repetition, fiction)
        return None if found is None else {**found, "part": "response"}

    def _stuck(self, text: str, density: float, k: int, repetition: float, fiction: bool) -> Evidence | None:
        if not text:
            return None
        p = self.params
        low = text.lower()
        needed = max(p.min_markers, int(density * len(text) / 1000) + 1)
        # Markers are counted in the assistant's own voice only; the density stays per the whole text.
        # In requested fiction every voice is performed (a nervous character, a monologue), so
        # hesitating is the piece; a story that is truly stuck still repeats itself (checked below).
        # Both bounds from one set of counts; in fiction neither signal is looked at.
        hes_bound, cas_bound = (0, 0) if fiction else marker_upper_bounds(text, low)
        if not fiction and hes_bound >= needed:
            own = _narration(text)
            own_low = own.lower() if own is not text else low
            n = count_hesitations(own, own_low)
            if n >= needed:
                return {"check": "hesitation", "markers": n, "density": round(1000 * n / len(text), 2),
                        "threshold": density, "window": own.strip()[:120]}
        if not fiction and cas_bound >= k:
            own = _narration(text)
            own_low = own.lower() if own is not text else low
            span = _cascade_span(own, own_low, k, p.cascade_window)
            if span is not None:
                return {"check": "cascade", "markers": k, "window_chars": p.cascade_window,
                        "window": own[span[0]:span[1] + 20][:160]}
        if repetition_exceeds(text, repetition, n=p.ngram_size, min_words=p.min_ngram_words):
            return {"check": "repetition",
                    "ratio": round(ngram_repetition(text, n=p.ngram_size, min_words=p.min_ngram_words), 4),
                    "threshold": repetition, "ngram": _top_ngram(text, p.ngram_size, p.min_ngram_words)}
        found = repeated_item(text, min_repeats=p.max_item_repeats, min_share=p.item_repeat_share)
        if found is None and p.max_sentence_repeats:
            found = repeated_units(text, min_repeats=p.max_sentence_repeats, min_share=p.item_repeat_share)
        if found is None and p.max_paragraph_repeats:
            found = repeated_paragraph(text, min_run=p.max_paragraph_repeats)
        return found
