"""Languages for the language-match check: which Latin-script language a text is written in, and whether a
request names a language or asks for a translation.

Scripts tell Chinese from Korean, but English, Spanish and Indonesian share one: their most frequent
words do not. Each language (en, es, fr, de, pt, it, id, nl) has a set of short words that carry no
topic; a text is said to be in a language only when that language's words clearly outnumber every
other's, so mixed or short text gets no call.
"""

from __future__ import annotations

import re
from collections import Counter
from operator import methodcaller

__all__ = ["asks_for_translation", "latin_language", "names_language"]

_FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset({
        "the", "and", "is", "are", "you", "your", "it", "that", "this", "with", "for", "of", "to", "in",
        "be", "can", "will", "have", "not", "what", "how", "if", "or", "but", "my", "we", "they", "there",
        "which", "when",
    }),
    "es": frozenset({
        "el", "los", "las", "del", "que", "y", "es", "para", "por", "con", "una", "un", "se", "su", "como",
        "pero", "más", "muy", "está", "puede", "lo", "al", "también", "sus", "hay", "este", "esta",
    }),
    "fr": frozenset({
        "le", "les", "des", "est", "une", "et", "pour", "avec", "vous", "que", "qui", "dans", "pas", "sur",
        "ce", "cette", "sont", "mais", "plus", "au", "du", "aux", "votre", "il", "elle",
    }),
    "de": frozenset({
        "der", "die", "das", "und", "ist", "nicht", "ein", "eine", "zu", "mit", "sie", "es", "den", "dem",
        "auch", "sich", "auf", "für", "wenn", "kann", "ich", "wir", "oder", "aber", "weil", "wird", "werden",
        "dass", "von", "bei", "nach", "man", "sind",
    }),
    "pt": frozenset({
        "o", "os", "um", "uma", "não", "para", "com", "que", "é", "do", "da", "dos", "das", "em", "mais",
        "você", "seu", "sua", "pode", "mas", "também", "ao", "isso", "porque", "no", "na", "ou", "muito",
        "quando", "está",
    }),
    "it": frozenset({
        "il", "gli", "della", "che", "è", "per", "non", "una", "un", "sono", "con", "del", "anche", "più",
        "può", "questo", "nel", "alla", "di", "essere",
    }),
    "id": frozenset({
        "yang", "dan", "di", "itu", "tidak", "dengan", "untuk", "ini", "anda", "adalah", "bisa", "akan",
        "dari", "atau", "juga", "kamu", "saya", "ada", "karena", "sudah", "lebih", "jika", "pada", "seperti",
        "harus", "agar",
    }),
    "nl": frozenset({
        "het", "een", "en", "van", "niet", "dat", "is", "zijn", "voor", "met", "ook", "maar", "je", "wat",
        "er", "op", "naar",
    }),
}
# word -> the languages it is a function word of (a few, like "que" or "is", belong to several).
_INDEX: dict[str, tuple[str, ...]] = {}
for _lang, _words in _FUNCTION_WORDS.items():
    for _w in _words:
        _INDEX[_w] = (*_INDEX.get(_w, ()), _lang)
_STRIP = methodcaller("strip", ".,;:!?¡¿()[]{}\"'«»“”‘’—-*_<>|/")
_MIN_WORDS = 6    # function words a language needs before it can be named
_MARGIN = 2.5     # ... and how many times the runner-up's count

# A language named in the request (in English, in itself, or in Chinese, Japanese or Korean).
_NAMES: dict[str, re.Pattern[str]] = {lang: re.compile(p, re.I) for lang, p in {
    "en": r"english|ingl[eé]s|anglais|englisch|inglese|inggris|engels|영어|英语|英文|英語",
    "es": r"spanish|espa[nñ]ol|castellano|espagnol|spanisch|spagnolo|spanyol|spaans|스페인어|西班牙语|スペイン語",
    "fr": r"french|fran[cç]ais|franc[eé]s|franz[oö]sisch|francese|perancis|frans|프랑스어|法语|フランス語",
    "de": r"german|deutsch|alem[aã]n?|allemand|tedesco|jerman|duits|독일어|德语|ドイツ語",
    "pt": r"portugu[eêé]s[ae]?|portuguese|portugais|portugiesisch|portoghese|포르투갈어|葡萄牙语|ポルトガル語",
    "it": r"italian[oa]?|italien(?:isch)?|italiano|이탈리아어|意大利语|イタリア語",
    "id": r"indonesian|indonesia|bahasa|인도네시아어|印尼语|インドネシア語",
    "nl": r"dutch|nederlands|holand[eé]s|n[eé]erlandais|niederl[aä]ndisch|olandese|belanda"
          r"|네덜란드어|荷兰语|オランダ語",
    "zh": r"中文|汉语|漢語|华语|普通话|中国語|중국어|chinese|mandarin",
    "ja": r"日本語|日语|日文|일본어|japanese",
    "ko": r"한국어|한글|韩语|韩文|韓国語|korean",
}.items()}
# A translation asked for, in the languages a request is written in.
_TRANSLATE = re.compile(r"translat|tradu[cz]|[uü]bersetz|vertaal|terjemah", re.I)
# Requests answered in another script on purpose: a translation, or language practice in a named
# language (English, Chinese, Japanese, Korean, Russian, ...).
_OTHER_SCRIPT_ASKED = re.compile(r"翻译|译成|翻訳|번역|英语|英文|英語|영어|"
                                 r"translat|in english|in chinese|in japanese|in korean"
                                 r"|in (?:russian|ukrainian|greek|arabic|hebrew|hindi|thai)\b"
                                 r"|俄语|俄文|ロシア語|러시아어"
                                 r"|по-(?:русски|английски)|на (?:русском|английском)|переве",
                                 re.I)


def latin_language(text: str, *, max_chars: int = 1000, min_words: int = _MIN_WORDS) -> str | None:
    """The language code whose function words (at least ``min_words``) clearly dominate the head of
    ``text``, else None."""
    counts = dict.fromkeys(_FUNCTION_WORDS, 0)
    # Whitespace words, punctuation stripped from their ends: str.split and strip run in C.
    words = map(_STRIP, text[:max_chars].lower().split())
    for langs, n in Counter(filter(None, map(_INDEX.get, words))).items():
        for lang in langs:
            counts[lang] += n
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    (top, n), (_, runner_up) = ranked[0], ranked[1]
    return top if n >= min_words and n >= _MARGIN * runner_up else None


def asks_for_translation(request: str) -> bool:
    """True when ``request`` asks for a translation or for an answer in a named other-script language."""
    return bool(_OTHER_SCRIPT_ASKED.search(request))


def names_language(request: str, lang: str) -> bool:
    """True when ``request`` names ``lang`` or asks for a translation (so an answer in ``lang`` is asked for)."""
    return bool(_TRANSLATE.search(request) or _NAMES[lang].search(request))
