"""Is a user turn a greeting or a very short simple question? (HardFilter rule 1)."""

from __future__ import annotations

import re

from services.cleaning.text import cjk_ratio

__all__ = ["is_greeting", "is_simple_query"]

_END = r"[\s?!.？！。~～]*"

_EN_GREETING = (r"(?:h+e+l+o+|h+i+|h+e+y+|y+o+|howdy|greetings|good\s+(?:morning|afternoon|evening|night|day)"
                r"|what'?s\s+up|how'?s\s+it\s+going|how\s+are\s+you)[\s,!.?]*")
_EN = re.compile(
    r"(?:" + _EN_GREETING
    + r"|(?:what|who|where|when|why|how|which)\s+(?:is|are|was|were|do|does|did|can|could|should|would|will)\b.{0,30}"
    r"|(?:what|who|where|when|why|how)'s\b.{0,30}"
    r"|(?:is|are|was|can|could|would|will|do|does|did|should)\s+(?:it|you|i|we|they|he|she|this|that)\b.{0,30}"
    r"|(?:tell\s+me\s+(?:about|more)|explain(?:\s+to\s+me)?|define|describe|list|summarize|give\s+me)\b.{0,20}"
    r"|(?:please\s+)?(?:help|assist)\s+me\b.{0,20})" + _END,
    re.I | re.S,
)

_ZH = (
    r"(?:你好|您好|早上好|下午好|晚上好|大家好|嗨|哈喽|哈|喂|hello|hi)" + _END,
    r".{0,7}(?:是什么|是啥|啥意思|什么意思|怎么样|如何|为什么|为啥)" + _END,
    r"(?:什么|啥|哪|谁|何|怎么|怎样|为什么|为啥|几|多少|何时|何地).{0,7}" + _END,
    r"(?:介绍|解释|说明|告诉我|帮我说说|请问|能说说|讲讲).{0,5}" + _END,
    r"(?:请(?:给出|介绍|解释|说明|说一下)|能否(?:给出|设计|介绍|解释)).{0,10}" + _END,
)
_JA = (
    r"(?:こんにちは|こんばんは|おはよう(?:ございます)?|やあ|どうも|はじめまして|"
    r"よろしく(?:お願いします|おねがいします)?)" + _END,
    r".{0,7}(?:とは何ですか|って何|について教えて(?:ください)?|はどうですか|ですか)" + _END,
    r"(?:何|なに|どこ|いつ|誰|だれ|なぜ|どうして|どう|どれ|どの).{0,7}" + _END,
)
# Korean polite endings are written out as words (the reference used a one-char class
# and so missed 무엇인가요 / 알려주세요).
_KO = (
    r"(?:안녕(?:하세요|하십니까)?|좋은\s*(?:아침|오후|저녁)(?:입니다|이에요)?|반갑습니다|여보세요)" + _END,
    r".{0,10}(?:무엇|뭐)(?:인가요|입니까|예요|에요|야|지|죠|인지)?" + _END,
    r"(?:무엇|뭐|어떻게|왜|언제|어디).{0,10}" + _END,
    r".{0,7}(?:에\s*대해|에\s*관해)\s*(?:알려\s*주|설명해\s*주?)(?:세요|십시오|줘|주세요|요)?" + _END,
)
_CJK = re.compile("|".join(f"(?:{p})" for p in (*_ZH, *_JA, *_KO)), re.I | re.S)
# The greetings alone (the first pattern of each language).
_GREETING = re.compile("|".join(f"(?:{p})" for p in (_EN_GREETING + _END, _ZH[0], _JA[0], _KO[0])), re.I | re.S)


def is_greeting(text: str) -> bool:
    """True for a greeting alone (hi, good morning, 你好, こんにちは, 안녕하세요)."""
    return bool(_GREETING.fullmatch(text.strip()))


def is_simple_query(text: str, *, min_chars: int = 10, min_chars_cjk: int = 6) -> bool:
    """True for greetings and short simple questions in en/zh/ja/ko."""
    text = text.strip()
    if not text:
        return True
    cjk = cjk_ratio(text) >= 0.3
    if len(text) < (min_chars_cjk if cjk else min_chars):
        return True
    return bool((_CJK if cjk else _EN).fullmatch(text))
