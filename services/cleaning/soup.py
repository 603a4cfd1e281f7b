"""TokenSoupFilter: drop rows with garbled assistant output.

Deliberate changes from the reference: kanji and kana share one script bucket
(ordinary Japanese alternates them constantly); laughter and exclamation runs
(哈哈哈…, !!!!, ㅋㅋㅋ) need a much longer run; with ``max_chars`` both the head
and the tail are checked; reasoning text is scanned too.
"""

from __future__ import annotations

import contextlib
import re
import unicodedata
from operator import eq
from typing import Any

import numpy as np
from pydantic import Field

from services.cleaning.base import Row, StepOutput
from services.cleaning.params import ParamStep, StepParams
from services.cleaning.requests import REQUEST_HEAD_CHARS, asks_for_repetition, asks_for_segmentation
from services.cleaning.text import INLINE_CODE_RE, cjk_count, message_text, visible_len

__all__ = ["Evidence", "SoupParams", "TokenSoupFilter", "mojibake", "script_chaos", "script_salad", "scripts_of",
           "shuffled_words", "soup_check", "soup_reason"]

Evidence = dict[str, Any]

# C0 controls but tab, LF and CR, and DEL: all ASCII, so deleting them from the text's ASCII
# bytes counts them (a C loop over the bytes, about twice as fast as a regex scan).
_CONTROL_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_PRIVATE_RE = re.compile("[\ue000-\uf8ff\U000f0000-\U0010ffff]")
_SPECIAL_RE = re.compile(
    r"<\|[^|>\n]{1,40}\|>|</s>|\[/?(?:PAD|UNK|SEP|CLS|MASK)\]|(?i:</?unk>|</?pad>)|<0x[0-9A-Fa-f]{2}>"
)
_RUN_EXEMPT = r"\s\-=_.*+~#|><0-9\u2013-\u2015\u2500-\u25ff\u2800-\u28ff\u30fc\uff0d"
_RUN_RE = re.compile(rf"([^{_RUN_EXEMPT}])\1{{19,}}")
# A run of 20 equal characters puts 4 equal ones in every 5th-character sample of the text.
_RUN_STEP = 5
_SAMPLE_RUN_RE = re.compile(rf"([^{_RUN_EXEMPT}])\1{{3}}")
_EXPRESSIVE = frozenset("!?！？哈呵嘿嘻ㅋㅎㅠㅜwW草啊")


# Script buckets; kana and kanji share "cjk" on purpose (see module docstring).
_RANGES = (
    (0x0000, 0x024F, 1), (0x0370, 0x03FF, 2), (0x0400, 0x04FF, 3), (0x0590, 0x05FF, 4),
    (0x0600, 0x06FF, 5), (0x0900, 0x097F, 6), (0x0E00, 0x0E7F, 7), (0x3040, 0x30FF, 8),
    (0x4E00, 0x9FFF, 8), (0xAC00, 0xD7A3, 9), (0xE000, 0xF8FF, 10),
)
_OTHER = 11


def _bmp_tables() -> tuple[np.ndarray, np.ndarray]:
    # One lookup per code point instead of a Python call per character.
    bucket = np.full(0x10000, _OTHER, dtype=np.uint8)
    for lo, hi, code in _RANGES:
        bucket[lo:hi + 1] = code
    alnum = np.fromiter((unicodedata.category(chr(c))[0] in "LN" for c in range(0x10000)), dtype=bool,
                        count=0x10000)
    return bucket, alnum


_BUCKET, _ALNUM = _bmp_tables()
_DIGIT = np.fromiter((unicodedata.category(chr(c)) == "Nd" for c in range(0x10000)), dtype=bool, count=0x10000)


_SKIP = 255
# One table per use: the script bucket of each BMP code point, or _SKIP where it does not count.
_LETTER_BUCKET = np.where(_ALNUM & ~_DIGIT, _BUCKET, _SKIP).astype(np.uint8)


def _buckets(text: str, table: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Script buckets of the characters of ``text`` that ``table`` (``keep`` for BMP) counts."""
    units = np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)
    if len(units) == len(text):  # no astral characters (the rule): one lookup per character
        found: np.ndarray = table[units]
        counted: np.ndarray = found[found != _SKIP]
        return counted
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    bmp = cps < 0x10000
    idx = np.where(bmp, cps, 0).astype(np.uint16)
    kept = np.where(bmp, keep[idx], True)  # astral letters (ext. B ideographs...) count, as "other"
    out: np.ndarray = np.where(bmp, _BUCKET[idx], _OTHER)[kept]
    return out


def script_chaos(text: str, *, min_chars: int = 40) -> float:
    """Share of adjacent letter pairs whose scripts differ (0 below ``min_chars`` letters).

    Digits belong to no script: numbered lines of Hangul or kana ("1: 홀\n2: 짝", "問3: ○") and
    measures inside CJK text (3,776m, 2024年) change no language.
    """
    if text.isascii():
        return 0.0
    buckets = _buckets(text, _LETTER_BUCKET, _ALNUM & ~_DIGIT)
    if len(buckets) < min_chars:
        return 0.0
    return float(np.count_nonzero(buckets[1:] != buckets[:-1])) / (len(buckets) - 1)


class SoupParams(StepParams):
    """Parameters of TokenSoupFilter (reference defaults plus our additions)."""

    replacement_char_ratio: float = Field(0.02, description="Max share of U+FFFD.")
    control_char_ratio: float = Field(0.01, description="Max share of C0 control chars (not tab/LF/CR).")
    private_use_ratio: float = Field(0.03, description="Max share of private-use code points.")
    special_token_count: int = Field(20, ge=1, description="Leaked special tokens at or above this count.")
    script_chaos_threshold: float = Field(0.55, description="Max script-change share.")
    script_chaos_min_chars: int = Field(40, ge=2, description="Chaos needs this many letters (digits are no script).")
    max_chars: int = Field(0, ge=0, description="0 = whole text; else head and tail halves of this size.")
    expressive_run_length: int = Field(200, ge=20, description="Run length for laughter/!?! runs.")
    prose_run_length: int = Field(50, ge=20, description="Run length in prose that goes on after the run.")
    code_run_length: int = Field(200, ge=20, description="Run length inside code or quotations.")
    layout_line_length: int = Field(
        100, ge=20, description="Longest layout/exempt/expressive run that may end the text (a rule line).")
    script_salad: bool = Field(True, description="Drop multilingual word salad (3+ scripts switching word by word).")
    mojibake: bool = Field(True, description="Drop UTF-8 text decoded as cp1252/latin-1 (è¥¿æ¹– for 西湖, "
                                             "CafÃ© for Café) or GBK.")
    scan_reasoning: bool = Field(True, description="Also scan reasoning_content/thinking.")


def _window(text: str, max_chars: int) -> str:
    if not max_chars or len(text) <= max_chars:
        return text
    half = max_chars // 2
    return text[:half] + "\n" + text[-half:]


# Spans whose runs are quoted material, not output: fenced and inline code, quotations.
_QUOTED_RE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]+`|\"[^\"\n]*\"|“[^”\n]*”|「[^」\n]*」|『[^』\n]*』"
                        r"|(?<![A-Za-z])'[^'\n]*'(?![A-Za-z])", re.S)
_TAIL_RE = re.compile(r"[\s\W_]*")


def _in_spans(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(a <= start and end <= b for a, b in spans)


# Closed code fences: a run inside one is program text (a 256-char test literal), not output.
_FENCE_RE = re.compile(r"```.*?```", re.S)
# Leaked chat-template role markers: a turn boundary followed by a role name (or a role token
# of its own) means the model went on to write the next turn itself.
_ROLE_LEAK_RE = re.compile(
    r"<\|(?:im_start|start_header_id)\|>\s*(?:user|assistant|system|tool|human)\b"
    r"|<\|(?:user|assistant|system|human)\|>|<start_of_turn>\s*(?:user|model)\b"
    r"|<\|im_end\|>\s*\n?\s*(?:user|assistant|human)\s*[:\n]",
    re.I,
)


def _is_layout(text: str, start: int, end: int) -> bool:
    """True when a run of one symbol or punctuation character lays the text out.

    Layout is a run that fills its own line (a rule, a title underline, an ASCII-art frame, a
    printed separator) or a leader between text and a number (a table of contents). Letter
    runs never are: glued to a word they are a stuck generation.
    """
    if unicodedata.category(text[start])[0] not in "SP":
        return False
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    before, after = text[line_start:start], text[end:line_end]
    if not before.strip() and not after.strip():
        return True
    # A leader: text on its left, a page or item number closing the line on its right.
    return bool(before.strip()) and after.strip().isdigit()


_MIN_TAIL_RUN = 20  # the shortest degenerate tail (letters glued to a word)


def _tail_run(text: str) -> tuple[str, int]:
    """The unit (one to four characters) repeated at the very end of ``text`` and the run's length."""
    best, best_n = "", 0
    for period in range(1, 5):
        unit = text[-period:]
        # A unit with a space is a repeated word, which DeadLoopFilter judges; a loop glued
        # inside one word (니다니다…) is a stuck generation.
        if len(unit) < period or any(c.isspace() for c in unit):
            break
        n = period
        while text.endswith(unit, 0, len(text) - n):
            n += period
        if n >= 4 * period and n > best_n:
            best, best_n = unit, n
    return best, best_n


def _tail_check(text: str, p: SoupParams) -> Evidence | None:
    """A degenerate tail: one to four characters repeated until the text stops.

    A stuck generation ends on its loop, whatever the character: digits (0000…), a sign
    (=====…), a laugh (哈哈哈…) or a syllable pair (니다니다…). Letters glued to a word count
    from 20 characters; layout, exempt and expressive characters only beyond a layout line,
    since a closing rule or a laugh of that length is written on purpose.
    """
    # Cheap screen: with the default limits a tail is at least 20 characters, and 20 characters
    # repeating a unit of one to four have equal characters 12 apart (12 is a multiple of every
    # period): most texts fail this before the run is measured.
    if p.layout_line_length >= _MIN_TAIL_RUN and (len(text) < _MIN_TAIL_RUN or text[-20:-12] != text[-8:]):
        return None
    unit, n = _tail_run(text)
    if not n:
        return None
    lettered = any(unicodedata.category(c)[0] == "L" for c in unit)
    expressive = all(c in _EXPRESSIVE for c in unit)
    start = len(text) - n
    layout = len(unit) == 1 and _is_layout(text, start, len(text))
    limit = _MIN_TAIL_RUN if lettered and not expressive and not layout else p.layout_line_length + 1
    if n < limit or _in_spans([m.span() for m in _FENCE_RE.finditer(text)], start, len(text)):
        return None
    return {"check": "char_run", "char": unit, "run_length": n, "offset": start, "quoted": False,
            "at_end": True, "window": _around(text, start, len(text))}


def _run_check(text: str, p: SoupParams) -> Evidence | None:
    """The first run of one character that is garbage, with its evidence.

    A run that ends the text (a generation stuck until its limit) counts from 20 characters;
    a run that prose goes on after counts from ``prose_run_length``; a run inside code or a
    quotation (``"x" * 30``, a ReDoS input, a padding example) only from ``code_run_length``;
    a run inside a closed code fence or one that lays the text out never (``_is_layout``).
    A run of exempt or expressive characters only counts at the end of the text (``_tail_check``);
    a unit of two to four letters repeated inside a word follows the same limits (``_loop_check``).
    """
    tail = _tail_check(text.rstrip(), p)
    if tail is not None:
        return tail
    if not _SAMPLE_RUN_RE.search(text[::_RUN_STEP]):  # a fifth of the text rules most single-char runs out
        return _loop_check(text, p)
    spans: list[tuple[int, int]] | None = None
    fences: list[tuple[int, int]] | None = None
    for m in _RUN_RE.finditer(text):
        n = len(m.group(0))
        if m.group(1) in _EXPRESSIVE and n < p.expressive_run_length:
            continue
        if _is_layout(text, m.start(), m.end()):
            continue
        if fences is None:
            fences = [x.span() for x in _FENCE_RE.finditer(text)]
        if _in_spans(fences, m.start(), m.end()):
            continue
        at_end = _TAIL_RE.fullmatch(text, m.end()) is not None
        if spans is None:
            spans = [x.span() for x in _QUOTED_RE.finditer(text)]
        quoted = _in_spans(spans, m.start(), m.end())
        limit = p.code_run_length if quoted else (20 if at_end else p.prose_run_length)
        if n >= limit:
            return {"check": "char_run", "char": m.group(1), "run_length": n, "offset": m.start(),
                    "quoted": quoted, "at_end": at_end, "window": _around(text, m.start(), m.end())}
    return _loop_check(text, p)


# A unit of two to four letters repeated inside one word (니다니다…, tiontiontion…): the same
# limits as a run of one character. Twelve repeats at least, since prose needs 50 characters.
_LOOP_RE = re.compile(r"([^\W\d_]{2,4}?)\1{11,}")
# Laughter written in syllables is expressive, like 哈哈哈 and ㅋㅋㅋ.
_LAUGH_UNITS = frozenset({"ha", "he", "hi", "ho", "ah", "ja", "je", "ji", "ka", "lol", "xa", "hah", "heh"})


# Every period from 1 to 4 divides 12, so in every 12th character a loop is a run of one letter:
# a loop of 48+ characters leaves 4 equal ones there. A C-speed screen over a twelfth of the
# text, since _LOOP_RE's backreference is slow over long text.
_LOOP_STEP = 12
_LOOP_SCREEN_RE = re.compile(r"([^\W\d_])\1{3}")


def _loop_check(text: str, p: SoupParams) -> Evidence | None:
    if min(p.prose_run_length, p.code_run_length) >= 4 * _LOOP_STEP and \
            not _LOOP_SCREEN_RE.search(text[::_LOOP_STEP]):
        return None
    spans: list[tuple[int, int]] | None = None
    for m in _LOOP_RE.finditer(text):
        unit, n = m.group(1), len(m.group(0))
        if len(set(unit)) == 1:
            continue  # a run of one character, judged above
        laugh = unit.lower() in _LAUGH_UNITS or all(c in _EXPRESSIVE for c in unit)
        if laugh and n < p.expressive_run_length:
            continue
        if spans is None:
            spans = [x.span() for x in _QUOTED_RE.finditer(text)]
        if _in_spans([x.span() for x in _FENCE_RE.finditer(text)], m.start(), m.end()):
            continue
        quoted = _in_spans(spans, m.start(), m.end())
        if n >= (p.code_run_length if quoted else p.prose_run_length):
            return {"check": "char_run", "char": unit, "run_length": n, "offset": m.start(), "quoted": quoted,
                    "at_end": False, "window": _around(text, m.start(), m.end())}
    return None


def _role_leak(text: str) -> Evidence | None:
    """A chat-template turn boundary with a role name outside code or quotes, whatever the count."""
    if "<" not in text:
        return None
    for m in _ROLE_LEAK_RE.finditer(text):
        if not _in_spans([x.span() for x in _QUOTED_RE.finditer(text)], m.start(), m.end()):
            return {"check": "template_leak", "token": m.group(0).strip(), "offset": m.start(),
                    "window": _around(text, m.start(), m.end())}
    return None


def _control_count(text: str) -> int:
    raw = text.encode("ascii", "ignore")
    return len(raw) - len(raw.translate(None, _CONTROL_BYTES))


def soup_check(text: str, p: SoupParams, *, runs: bool = True) -> Evidence | None:
    """Evidence of the first garbling check ``text`` fails (``check`` names it), or None.

    ``runs=False`` skips the runs of one character or unit (the user asked for them).
    """
    text = _window(text.strip(), p.max_chars)
    if not text:
        return None
    n = len(text)
    bad = text.count("\ufffd")
    if bad / n > p.replacement_char_ratio:
        return {"check": "replacement_char", "count": bad, "ratio": round(bad / n, 4),
                "window": _around(text, text.index("\ufffd"), text.index("\ufffd") + 1)}
    if (k := _control_count(text)) and k / n > p.control_char_ratio:
        return {"check": "control_char", "count": k, "ratio": round(k / n, 4)}
    # A ratio check with a regex first asks whether one such character exists at all (search stops early).
    if not text.isascii() and _PRIVATE_RE.search(text) and \
            (k := len(_PRIVATE_RE.findall(text))) / n > p.private_use_ratio:
        return {"check": "private_use", "count": k, "ratio": round(k / n, 4)}
    # Every special token starts with "<" or "[": fewer of those than the limit cannot reach it.
    if text.count("<") + text.count("[") >= p.special_token_count and \
            len(tokens := _SPECIAL_RE.findall(text)) >= p.special_token_count:
        first = _SPECIAL_RE.search(text)
        return {"check": "special_tokens", "count": len(tokens), "tokens": sorted(set(tokens))[:5],
                "window": _around(text, first.start(), first.end()) if first else ""}
    leak = _role_leak(text)
    if leak is not None:
        return leak
    pieces = _piece_leak(text)
    if pieces is not None:
        return pieces
    run = _run_check(text, p) if runs else None
    if run is not None:
        return run
    if not text.isascii() and (symbols := symbol_soup(text)) is not None:
        return symbols
    if (mash := symbol_mash(text) or symbol_confetti(text)) is not None:
        return mash
    if _chaos_exceeds(text, p.script_chaos_min_chars, p.script_chaos_threshold):
        return {"check": "script_chaos", "chaos": round(script_chaos(text, min_chars=p.script_chaos_min_chars), 4),
                "threshold": p.script_chaos_threshold, "scripts": scripts_of(text), "window": text[:120]}
    if p.script_salad and ((salad := script_salad(text)) is not None or (salad := loose_particles(text)) is not None
                           or (salad := script_hops(text)) is not None
                           or (salad := shuffled_words(text)) is not None or (salad := jamo_soup(text)) is not None
                           or (salad := stuttered_words(text)) is not None):
        return salad
    return mojibake(text) if p.mojibake else None


# Symbols strung together where words should be (℃⌒≒♀←★￡∈∷∏, the symbol rows of legacy CJK
# code pages): punctuation, letterlike, arrows, maths, technical, geometric and other symbols, and
# their full-width forms. Box drawing and block elements are left out (tables, progress bars), and so
# are CJK punctuation and emoji. A run must mix at least _SYMBOL_KINDS different ones: a separator
# line or a row of stars is one repeated character (the run checks judge those).
_SYMBOLS = ("\u00a2-\u00bf\u00d7\u00f7\u2010-\u24ff\u25a0-\u2bff\ufe30-\ufe4f\uff01-\uff0f\uff1a-\uff20"
            "\uff3b-\uff40\uff5b-\uff65\uffe0-\uffee")
# Eight symbols or more, single spaces between them allowed ("§‡¤ ≈≈ ∂∆ ¶¶").
_SYMBOL_RUN_RE = re.compile(f"[{_SYMBOLS}](?: ?[{_SYMBOLS}]){{7,}}")
_SYMBOL_KINDS = 6
_SYMBOL_MIN = 30  # symbols in such runs, at least ...
_SYMBOL_SHARE = 0.3  # ... and this share of the text


# Keyboard mash: ASCII punctuation strung together with other symbols and stray letters, hardly a word
# between (~#@!%&*()_+{}|:<>?][;'/.,`§±¶•ªº–≠«»∑∂ƒ©). Code writes such runs, so code is left out; a table
# rule or a separator line mixes a few kinds only, and a list of special characters spaces them out.
_ASCII_PUNCT_BYTES = bytes(c for c in range(0x21, 0x7F) if not chr(c).isalnum())
_ASCII_PUNCT = re.escape(_ASCII_PUNCT_BYTES.decode())
_MASH_RUN_RE = re.compile(
    f"[{_ASCII_PUNCT}{_SYMBOLS}](?:[{_ASCII_PUNCT}{_SYMBOLS}]|[^\\W\\d_](?![^\\W\\d_])){{11,}}")
_MASH_RUN_KINDS = 8  # different characters in one run, at least ...
_MASH_KINDS = 16  # ... in all the runs together
_MASH_MIN = 30  # characters in such runs, at least ...
_MASH_SHARE = 0.4  # ... and this share of the text's characters other than spaces


def _outside_code(text: str) -> str:
    """``text`` with its fenced blocks and inline code spans blanked."""
    return INLINE_CODE_RE.sub(" ", _FENCE_RE.sub(" ", text))


def _ascii_punct(text: str) -> int:
    raw = text.encode("ascii", "ignore")
    return len(raw) - len(raw.translate(None, _ASCII_PUNCT_BYTES))


def symbol_mash(text: str) -> Evidence | None:
    """Evidence that runs of punctuation and symbols (stray letters among them, no words) fill much of
    ``text`` outside code, or None."""
    punct = _ascii_punct(text)
    if punct < 12:
        return None  # exact screen: every run holds twelve characters, ASCII punctuation among them
    if "`" in text:
        text = _outside_code(text)
        punct = _ascii_punct(text)
    # Exact screen: a stray letter in a run comes before a symbol of it, so the runs hold at most twice as
    # many characters as there are symbols (ASCII punctuation, and non-ASCII characters other than CJK).
    need = max(_MASH_MIN, _MASH_SHARE * visible_len(text))
    others = len(text) - len(text.encode("ascii", "ignore"))
    if 2 * (punct + others) >= need and others:
        others -= cjk_count(text)
    if 2 * (punct + others) < need:
        return None
    runs = [m for m in _MASH_RUN_RE.finditer(text) if len(set(m.group(0))) >= _MASH_RUN_KINDS]
    chars = sum(m.end() - m.start() for m in runs)
    if chars < need:
        return None
    kinds = set().union(*(m.group(0) for m in runs))
    if len(kinds) < _MASH_KINDS:
        return None
    return {"check": "symbol_mash", "chars": chars, "kinds": len(kinds),
            "window": _around(text, runs[0].start(), runs[0].end())}


# Symbol confetti: symbols of many kinds, each doubled or tripled, sprinkled between the words (预计 ▒▒ 3-5个工作日
# ‡‡‡ ◊◊ 原路返回 ¤¤¤ ∑∑, "Terminal ∆˚¬ 6Ω≈ç√ gate ¥¥¥ ¤¤ §§"). Doubled marks that CJK and casual text write
# (……, ——, ！！, ～～, ♪♪, ★★) are left out; so is code.
_DOUBLED_SYMBOL_RE = re.compile(f"([{_SYMBOLS}])\\1")
_PROSE_DOUBLES = frozenset("—–―…‥・·～〜！？＂＃＆＊＋，－．／：；＜＝＞＠＼＾＿｀｜♪♫♡♥★☆→←↑↓⇒⇔•°")
_CONFETTI_KINDS = 5  # different symbols doubled, at least ...
_CONFETTI_SHARE = 0.1  # ... and symbols this share of the text's characters other than spaces
_ANY_SYMBOL_RE = re.compile(f"[{_SYMBOLS}]")


def symbol_confetti(text: str) -> Evidence | None:
    """Evidence that symbols of many kinds, doubled, are strewn through ``text`` outside code, or None."""
    if text.isascii():
        return None
    if "`" in text:
        text = _outside_code(text)
    pairs = list(_DOUBLED_SYMBOL_RE.finditer(text))
    doubled = {m.group(1) for m in pairs} - _PROSE_DOUBLES
    if len(doubled) < _CONFETTI_KINDS:
        return None
    symbols = len(_ANY_SYMBOL_RE.findall(text))
    if symbols < _CONFETTI_SHARE * visible_len(text):
        return None
    return {"check": "symbol_confetti", "doubled": "".join(sorted(doubled)), "symbols": symbols,
            "window": _around(text, pairs[0].start(), pairs[0].end())}


def symbol_soup(text: str) -> Evidence | None:
    """Evidence that runs of mixed symbols (no words; single spaces at most) fill much of ``text``, or None."""
    runs = [m for m in _SYMBOL_RUN_RE.finditer(text) if len(set(m.group(0)) - {" "}) >= _SYMBOL_KINDS]
    total = sum(m.end() - m.start() - m.group(0).count(" ") for m in runs)
    if total < _SYMBOL_MIN or total < _SYMBOL_SHARE * len(text):
        return None
    return {"check": "symbol_soup", "symbols": total, "share": round(total / len(text), 4),
            "window": _around(text, runs[0].start(), runs[0].end())}


# Tokenizer pieces printed as text: byte-level BPE's space and newline marks (Ġ, Ċ) and
# SentencePiece's (▁) before a word, WordPiece's "##" inside one. Prose never writes them so (the
# Maltese Ġ and Ċ start a handful of its words; block-drawing ▁ stands before no letter), so five
# such pieces making a tenth of the words are a detokenisation that never happened.
_PIECE_RE = re.compile(r"[\u0120\u010a\u2581](?=[^\W\d_]|[\u0120\u010a\u2581])|(?<![#\w])##(?=[^\W\d_])")
_PIECE_MIN = 5
_PIECE_SHARE = 0.1


def _piece_leak(text: str) -> Evidence | None:
    if text.isascii():
        return None  # exact screen: the space and newline marks are not ASCII (WordPiece alone is not judged)
    found = _PIECE_RE.findall(text)
    if len(found) < _PIECE_MIN or len(found) < _PIECE_SHARE * len(text.split()):
        return None
    first = _PIECE_RE.search(text)
    return {"check": "tokenizer_pieces", "count": len(found), "pieces": sorted(set(found)),
            "window": _around(text, first.start(), first.end()) if first else ""}


def soup_reason(text: str, p: SoupParams) -> str | None:
    """Name of the first garbling check ``text`` fails, or None."""
    found = soup_check(text, p)
    return None if found is None else str(found["check"])


def _around(text: str, start: int, end: int, pad: int = 40) -> str:
    """The matched span with a little context on each side, at most ~120 characters."""
    end = min(end, start + 40)
    return text[max(0, start - pad):end + pad]


_SCRIPT_NAMES = {1: "latin", 2: "greek", 3: "cyrillic", 4: "hebrew", 5: "arabic", 6: "devanagari", 7: "thai",
                 8: "cjk", 9: "hangul", 10: "private", _OTHER: "other"}


def _letter_buckets(text: str) -> np.ndarray:
    # Letters only: digits belong to every script, so they never mark a switch.
    return _buckets(text, _LETTER_BUCKET, _ALNUM & ~_DIGIT)


def scripts_of(text: str) -> list[str]:
    """Names of the scripts of the letters of ``text``, most letters first."""
    if text.isascii():
        return ["latin"] if any(c.isalpha() for c in text) else []
    values, counts = np.unique(_letter_buckets(text), return_counts=True)
    return [_SCRIPT_NAMES[int(v)] for v, _ in sorted(zip(values, counts), key=lambda vc: -vc[1])]


# Word salad switches script between words of one sentence; a glossary or a table switches
# at punctuation (a pipe, a bracket, a colon, a quote), so segments end there.
_SEGMENT_RE = re.compile(r"[^.!?。！？\n|()（）\[\]「」『』“”\"':：;；/=<>{}]+")
_WORD_RE = re.compile(r"[^\W\d_]+")
_SALAD_MIN_SCRIPTS = 3
_SALAD_MIN_SWITCHES = 6
_SALAD_LETTERS_PER_SWITCH = 8
# ... or once per three words: Latin words are long, so a Latin-heavy salad ("TCP the connection
# fiable 连接 packet order le données ...") switches often by words but not by letters.
_SALAD_WORDS_PER_SWITCH = 3
# A last sentence this switchy is salad whatever its share of the text: the generation degenerated.
_SALAD_TAIL_SWITCHES = 10
_LIST_SEP_RE = re.compile(r"[,，、]|\s(?:and|or|und|et|y|и|和|或)\s")


# Presence of each script family (the "other" family may hold several): a C-speed screen.
_HANGUL = re.compile("[\uac00-\ud7a3]")
_SCRIPT_PRESENT = (re.compile("[A-Za-z]"), re.compile("[\u3040-\u30ff\u4e00-\u9fff]"), _HANGUL,
                   re.compile("[\u0370-\u06ff\u0900-\u097f\u0e00-\u0e7f]"))


_RARE_SCRIPT = re.compile("[\uac00-\ud7a3\u0370-\u06ff\u0900-\u097f\u0e00-\u0e7f]")


def _script_of(ch: str) -> int:
    c = ord(ch)
    return int(_BUCKET[c]) if c < 0x10000 else _OTHER


def script_salad(text: str, *, min_share: float = 0.5) -> Evidence | None:
    """Evidence of multilingual word salad: sentences whose words hop between 3+ scripts.

    A sentence is salad when its letter runs span at least three scripts and switch script
    at least six times, once per eight letters or once per three words or more often; the text is salad when such
    sentences hold ``min_share`` of its letters. Script chaos (per character) misses this:
    each word is several letters of one script.
    """
    # The cheap screen: three script families need hangul or a non-CJK script (Latin and CJK
    # alone are two), and that one search fails on almost all Chinese and Japanese text.
    if text.isascii() or not _RARE_SCRIPT.search(text) or \
            sum(1 for rx in _SCRIPT_PRESENT if rx.search(text)) < _SALAD_MIN_SCRIPTS - 1:
        return None
    buckets = _letter_buckets(text)
    if len(buckets) < 30:
        return None
    if len(np.unique(buckets)) < _SALAD_MIN_SCRIPTS:
        return None  # exact: a salad sentence needs three scripts, and most mixed text has two
    salad_letters, switches, scripts, first = 0, 0, set(), ""
    tail: tuple[int, str] | None = None  # (switches, text) of the last sentence with letters, when it is salad
    for seg in _SEGMENT_RE.finditer(text):
        runs: list[tuple[int, int]] = []
        # Switches between words of one list item: a list of languages ("English, 中文, 한국어 and
        # Русский") switches at its separators, salad between plain words.
        inner, words = 0, 0
        for item in _LIST_SEP_RE.split(seg.group(0)):
            item_runs = 0
            for word in _WORD_RE.findall(item):
                words += 1
                for ch in word:
                    s = _script_of(ch)
                    if runs and runs[-1][0] == s:
                        runs[-1] = (s, runs[-1][1] + 1)
                    else:
                        runs.append((s, 1))
                        item_runs += 1
            inner += max(0, item_runs - 1)
        seg_scripts = {s for s, _ in runs}
        seg_switches = len(runs) - 1
        letters = sum(n for _, n in runs)
        salad = len(seg_scripts) >= _SALAD_MIN_SCRIPTS and seg_switches >= _SALAD_MIN_SWITCHES and (
            seg_switches * _SALAD_LETTERS_PER_SWITCH >= letters or inner * _SALAD_WORDS_PER_SWITCH >= words)
        if salad:
            salad_letters += letters
            switches += seg_switches
            scripts |= seg_scripts
            first = first or seg.group(0).strip()[:120]
        if letters:
            tail = (seg_switches, seg.group(0).strip()[:120]) if salad else None
    if salad_letters < min_share * len(buckets):
        # A generation that degenerates at its end: good sentences, then one that hops script every word.
        if tail is not None and tail[0] >= _SALAD_TAIL_SWITCHES:
            return {"check": "script_salad", "scripts": sorted(_SCRIPT_NAMES[s] for s in scripts),
                    "switches": tail[0], "salad_share": round(salad_letters / len(buckets), 3), "at_end": True,
                    "window": tail[1]}
        return None
    return {"check": "script_salad", "scripts": sorted(_SCRIPT_NAMES[s] for s in scripts), "switches": switches,
            "salad_share": round(salad_letters / len(buckets), 3), "window": first}


# Salad strewn with its own punctuation ("おすすめ は ∮… ห ⟁ — пожалуйста — mañana… 𝔸; 東福寺 的… ずつ?") cuts
# every sentence short, so the sentence test above sees no switches. Read instead within lines, split only
# where tables and glossaries put their columns (pipes, brackets, colons, quotes): four scripts and more,
# hopping word to word, there is salad; a glossary row holds its scripts in separate columns.
_LINE_PART_RE = re.compile(r"[^\n|()（）\[\]「」『』“”\"':：/=<>{}]+")
_HOP_MIN_SCRIPTS = 4
_HOP_MIN_SWITCHES = 8
_HOP_WORDS_PER_SWITCH = 3
_HOP_SHARE = 0.3  # of the letters
_HOP_DENSE_SWITCHES = 12


def script_hops(text: str) -> Evidence | None:
    """Evidence that lines of ``text`` hop between four or more scripts from word to word, or None."""
    if text.isascii() or not _RARE_SCRIPT.search(text):
        return None
    # Exact screen: three scripts in a line need three in the text (most mixed text has two). Latin, CJK and
    # Hangul are one script each, so with fewer than two of those families only the rest can hold the others.
    present = [rx.search(text) is not None for rx in _SCRIPT_PRESENT]
    if sum(present) < _HOP_MIN_SCRIPTS - 2 or (sum(present) == _HOP_MIN_SCRIPTS - 2 and (
            not present[-1] or len(np.unique(_letter_buckets(text))) < _HOP_MIN_SCRIPTS - 1)):
        return None
    hop_letters, total_letters, switches, scripts, first = 0, 0, 0, set(), ""
    for part in _LINE_PART_RE.finditer(text):
        all_words = _WORD_RE.findall(part.group(0))
        kinds = {_script_of(w[0]) for w in all_words}
        words, letters = len(all_words), sum(map(len, all_words))
        total_letters += letters
        if len(kinds) < _HOP_MIN_SCRIPTS - 1:
            continue  # too few scripts in this line to hop between
        # Hops within list items only: a list of languages or of greetings ("谢啦 in Chinese, どうも in
        # Japanese, 고마워 in Korean") changes script at its commas.
        hops = 0
        for item in _LIST_SEP_RE.split(part.group(0)):
            item_kinds = [_script_of(w[0]) for w in _WORD_RE.findall(item)]
            hops += sum(1 for a, b in zip(item_kinds, item_kinds[1:], strict=False) if a != b)
        # Four scripts hopping every third word, or three hopping every other word (a glossary line or
        # bilingual prose with its terms in a third script switches far less often).
        if (len(kinds) >= _HOP_MIN_SCRIPTS and hops >= _HOP_MIN_SWITCHES and hops * _HOP_WORDS_PER_SWITCH >= words) \
                or (len(kinds) >= _HOP_MIN_SCRIPTS - 1 and hops >= _HOP_DENSE_SWITCHES and 2 * hops >= words):
            hop_letters += letters
            switches += hops
            scripts |= kinds
            first = first or part.group(0).strip()[:120]
    if not hop_letters or hop_letters < _HOP_SHARE * total_letters:
        return None
    return {"check": "script_salad", "scripts": sorted(_SCRIPT_NAMES[k] for k in scripts), "switches": switches,
            "salad_share": round(hop_letters / total_letters, 3), "window": first}


# Particles and endings that Korean and Chinese attach to the word before them (사과를, 我的): standing
# alone between spaces, many of them, they are the remains of shuffled or scrambled words.
# Korean: after a Hangul word or a number (after code or an English word a spaced particle is a common habit);
# 이, 가, 도 and 만 are left out, being words too (this, go, degrees, ten thousand).
_KO_LOOSE = frozenset({"은", "는", "을", "를", "에", "에서", "으로", "의", "와", "과", "에게", "한테", "부터", "까지",
                       "습니다", "입니다", "요"})
# Chinese: the particles, and the one-character function words (是, 很, 也, 在, ...) that prose always
# joins to a neighbour; Chinese puts no spaces between words, so each alone is a piece of scrambled text.
_ZH_LOOSE = frozenset({"的", "了", "吗", "呢", "吧", "着", "过", "是", "很", "也", "在", "和", "就", "都", "要", "把",
                       "被", "还"})
# Japanese: after a word in kana or kanji (分かち書き the user asks for is exempted by the filter).
# One pass for "any of them between spaces" (the screen of loose_particles).
_ZH_SPACED_RE = re.compile("(?<= )[" + "".join(sorted(p for p in _ZH_LOOSE if len(p) == 1)) + "](?= )")
_JA_LOOSE = frozenset({"は", "が", "を", "に", "の", "で", "と", "も", "へ", "から", "まで", "より", "ます", "です"})
_JA_END = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]$")
_LOOSE_MIN = 4
_LOOSE_SHARE = 0.08
_TOKEN_STRIP = ".,!?;:。，！？；：、…\"'()（）「」"
# After a Hangul word or a number ("14 입니다", "55 는"): Korean writes both attached to what follows.
_HANGUL_END = re.compile(r"[\uac00-\ud7a3\d%]$")


# Words of one language in shuffled order. English: an article never comes before a preposition, a
# verb, a pronoun or a stop ("the of", "the will", "an is"), and a preposition seldom before a comma
# ("temperature for,"; before a full stop it is often stranded, "the job you apply for.", and on, in,
# up and to end phrasal verbs and infinitives: "powered on,", "agreed to,"), while shuffled prose
# makes such pairs every few words. "a" is left out: it is
# also a variable or an option ("a is 3", "options a, b"). Japanese: a sentence
# never ends on the object or subject particle (混雑を。), except the softening ですが。.
_FUNCTION_AFTER_ARTICLE = ("the|an?|of|to|for|in|on|at|with|by|from|and|or|but|is|are|was|were|be|will|would|can|could"
                           "|should|has|have|had|it|he|she|they|we|i|you|this|that|does|do|did")
# The first-letter lookahead lets the engine skip most positions with one test.
_ORDER_BREAK_RE = re.compile(
    r"\b(?=[taoifwb])(?:(?:the|an)(?:\s+(?:" + _FUNCTION_AFTER_ARTICLE + r")\b|(?=[.,;:!]))"
    r"|(?:of|for|at|with|by|from|into|about)(?=[,;:](?:\s|$))"
    r"|of\s+(?:is|are|was|were|and|or|of|to|for|with|by|from)\b)"
)
_ORDER_WORD_RE = re.compile(r"\S+")
_CODE_SPAN_RE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.S)
_ORDER_HEAD = 1200  # the head of a reply (some 200 words) shows its word order as well as the whole does
_ORDER_MIN_WORDS = 40
_ORDER_MIN_BREAKS = 3
_ORDER_BREAK_SHARE = 0.02
_JA_PARTICLE_END_RE = re.compile(r"(?:を|(?<![すただけれ])が)[。！]")
_JA_MIN_ENDS = 3


def shuffled_words(text: str) -> Evidence | None:
    """Evidence that the words of an English or Japanese reply are in shuffled order, or None."""
    head = text[:_ORDER_HEAD]
    if head.isascii() or _non_ascii_share(head) < 0.05:
        # Words are separated by spaces or line breaks: fewer separators than words needed settle it.
        if head.count(" ") + head.count("\n") < _ORDER_MIN_WORDS - 1:
            return None
        return _english_order(head)
    if "を。" in head or "が。" in head or "を！" in head or "が！" in head:
        ends = _JA_PARTICLE_END_RE.findall(head)
        sentences = head.count("。") + head.count("！")
        if len(ends) >= _JA_MIN_ENDS and 4 * len(ends) >= sentences:
            return {"check": "shuffled_words", "language": "ja", "particle_ends": len(ends), "sentences": sentences,
                    "window": head[:120]}
    return None


# Hangul written as loose letters (ㅇㅏㄴ ㄴㅕㅇ for 안녕): Korean text writes syllable blocks, and of the
# compatibility letters only a few stand alone by custom (ㅋㅋ, ㅎㅎ, ㅠㅠ, ㅜㅜ, ㅇㅇ, ㄱㄱ, ㄴㄴ). A vowel standing
# alone, among many letters, is text that never got assembled.
_JAMO_RE = re.compile("[\u3131-\u318e]")
_LONE_VOWEL_RE = re.compile("[\u314f-\u3163]")
_CUSTOM_VOWELS = frozenset("ㅠㅜ")
_JAMO_MIN_VOWELS = 5
_JAMO_SHARE = 0.15  # of the Hangul characters (letters and syllables)
_HANGUL_SYLLABLE_RE = re.compile("[\uac00-\ud7a3]")


def jamo_soup(text: str) -> Evidence | None:
    """Evidence that Korean text is written in loose letters instead of syllables, or None."""
    first = None if text.isascii() else _LONE_VOWEL_RE.search(text)
    if first is None or sum(c not in _CUSTOM_VOWELS for c in _LONE_VOWEL_RE.findall(text)) < _JAMO_MIN_VOWELS:
        return None
    jamo = len(_JAMO_RE.findall(text))
    hangul = jamo + len(_HANGUL_SYLLABLE_RE.findall(text))
    if jamo < _JAMO_SHARE * hangul:
        return None
    return {"check": "jamo_soup", "letters": jamo, "share": round(jamo / hangul, 4),
            "window": _around(text, first.start(), first.start())}


# The same word twice in a row, again and again ("bake bake ... flour flour ... clean clean clean"):
# prose doubles a word now and then ("that that", "bye bye"); many different words doubled is a
# decoder stuttering. Code is left out (its brackets and keywords pair up by nature).
# (Case-sensitive, two letters or more: an alphabet table pairs "А а", "B b".)
_STUTTER_RE = re.compile(r"(?<!\S)(\w{2,})\s+\1(?![^\s.,;:!?])")
_STUTTER_MIN_PAIRS = 6
_STUTTER_MIN_WORDS = 5  # different doubled words
_STUTTER_SHARE = 0.08  # of the words


def stuttered_words(text: str) -> Evidence | None:
    """Evidence that many different words of ``text`` come twice in a row, or None."""
    # A cheap count in C first: neighbouring tokens (split on spaces) that are equal. A doubled word with
    # punctuation after its second copy ("smooth smooth,") is not counted there, so half the pairs will do.
    tokens = text.split()
    if 2 * sum(map(eq, tokens, tokens[1:])) < _STUTTER_MIN_PAIRS:
        return None
    if "```" in text:
        text = _CODE_SPAN_RE.sub(" ", text)
        tokens = text.split()
    pairs = [m for m in _STUTTER_RE.finditer(text) if not m.group(1).isdigit()]
    if len(pairs) < _STUTTER_MIN_PAIRS:
        return None
    words = {m.group(1).lower() for m in pairs}
    total = len(tokens)
    if len(words) < _STUTTER_MIN_WORDS or len(pairs) < _STUTTER_SHARE * total:
        return None
    return {"check": "stuttered_words", "pairs": len(pairs), "words": sorted(words)[:8], "of_words": total,
            "window": _around(text, pairs[0].start(), pairs[0].end())}


def _non_ascii_share(text: str) -> float:
    return 1 - len(text.encode("ascii", "ignore")) / len(text) if text else 0.0


def _english_order(text: str) -> Evidence | None:
    if "`" in text:
        text = _CODE_SPAN_RE.sub(" ", text)
    low = text.lower()
    breaks = _ORDER_BREAK_RE.findall(low)  # in C; most replies have none
    if len(breaks) < _ORDER_MIN_BREAKS:
        return None
    words = len(_ORDER_WORD_RE.findall(low))
    if words < _ORDER_MIN_WORDS or len(breaks) < _ORDER_BREAK_SHARE * words:
        return None
    return {"check": "shuffled_words", "language": "en", "breaks": len(breaks), "words": words,
            "pairs": breaks[:5], "window": text.strip()[:120]}


def loose_particles(text: str) -> Evidence | None:
    """Evidence that particles stand alone between spaces, as scrambled Korean or Chinese leaves them, or None."""
    if text.isascii():
        return None
    spaced_zh = _ZH_SPACED_RE.search(text) is not None
    spaced_ja = any(f" {p} " in text for p in ("は", "が", "を", "に", "の", "で"))
    if not spaced_zh and not spaced_ja and _HANGUL.search(text) is None:
        return None  # the cheap screen: no Hangul, and no Chinese or Japanese particle between spaces
    tokens = [t.strip(_TOKEN_STRIP) for t in text.split()]
    ko = sum(1 for prev, tok in zip(tokens, tokens[1:]) if tok in _KO_LOOSE and _HANGUL_END.search(prev))
    zh = sum(1 for tok in tokens if tok in _ZH_LOOSE) if spaced_zh else 0
    ja = sum(1 for prev, tok in zip(tokens, tokens[1:]) if tok in _JA_LOOSE and _JA_END.search(prev)) \
        if spaced_ja else 0
    found, particles = max((ko, _KO_LOOSE), (zh, _ZH_LOOSE), (ja, _JA_LOOSE), key=lambda kp: kp[0])
    if found < _LOOSE_MIN or found < _LOOSE_SHARE * len(tokens):
        return None
    loose = sorted({t for t in tokens if t in particles})
    return {"check": "loose_particles", "count": found, "tokens": len(tokens), "particles": loose,
            "window": text.strip()[:120]}


# UTF-8 read as cp1252 (or latin-1): each byte of a multi-byte character became one Latin-1 or
# cp1252 character (西 -> è¥¿). Such text sits in the Latin bucket, so script checks miss it.
_CP1252_BYTE: dict[str, int] = {}
for _b in range(0x80, 0x100):
    # Five bytes cp1252 leaves undefined; latin-1 maps them (and all others) to U+0080-U+00FF.
    with contextlib.suppress(UnicodeDecodeError):
        _CP1252_BYTE[bytes([_b]).decode("cp1252")] = _b
    _CP1252_BYTE.setdefault(chr(_b), _b)
_MOJIBAKE_RUN_RE = re.compile("[" + "".join(re.escape(c) for c in _CP1252_BYTE) + "]{2,}")
_MOJIBAKE_MIN_CJK = 8


# Runs of non-ASCII text, spaces between words included (Korean separates its words): a space
# counts when a non-ASCII character follows it. Written as runs of non-ASCII joined by single
# spaces (the same maximal runs, each run of characters matched in one step, about twice as fast);
# only runs of _WIDE_MIN characters or more are kept.
_WIDE_RUN_RE = re.compile(r" ?[^\x00-\x7f]+(?: [^\x00-\x7f]+)*")
_WIDE_MIN = 6
# GBK bytes other than the lead bytes of UTF-8's CJK characters (U+3040-U+9FFF, U+AC00-U+D7A3:
# three bytes each, led by E3-ED), and those characters' byte shape: the screen of _gbk_mojibake.
_NON_CJK_LEAD = bytes(b for b in range(256) if not 0xE3 <= b <= 0xED)
_CJK_UTF8_RE = re.compile(rb"[\xe3-\xed][\x80-\xbf]{2}")
_GBK_MAX_LOST = 0.35  # share of replacement characters mojibake may leave (bytes GBK could not show); real text: ~0.8


def mojibake(text: str) -> Evidence | None:
    """Evidence of UTF-8 text decoded as cp1252/latin-1 (or GBK): CJK text (``_cjk_mojibake``) or
    accented and typographic Latin text (``_latin_mojibake``: CafÃ©, donâ€™t)."""
    if text.isascii():
        return None
    found = _cjk_mojibake(text)
    return found if found is not None else _latin_mojibake(text)


# Latin mojibake: a character of two or three UTF-8 bytes (é = C3 A9, ’ = E2 80 99) became as many
# cp1252 characters. Real text almost never holds such a pair: the lead must be an accented capital
# (Â-ß) or à-ï, and what follows a symbol or cp1252 punctuation (©, ¨, €, ™), not a letter. So a
# pair that decodes back as strict UTF-8 is damage; three repaired characters make it more than a
# stray name or symbol.
_LATIN_MOJIBAKE_MIN = 3
# A repaired character starts with a lead byte (C2-F4) followed by a continuation byte (80-BF): the
# pair of characters they became is the exact screen (absent from almost all text, CJK included).
_LATIN_PAIR_RE = re.compile(
    "[" + "".join(re.escape(c) for c, b in _CP1252_BYTE.items() if 0xC2 <= b <= 0xF4) + "]"
    "[" + "".join(re.escape(c) for c, b in _CP1252_BYTE.items() if 0x80 <= b <= 0xBF) + "]")


def _latin_mojibake(text: str) -> Evidence | None:
    if _LATIN_PAIR_RE.search(text) is None:
        return None
    repaired: list[str] = []
    first: re.Match[str] | None = None
    for m in _MOJIBAKE_RUN_RE.finditer(text):
        try:
            fixed = bytes(_CP1252_BYTE[c] for c in m.group(0)).decode("utf-8")
        except UnicodeDecodeError:
            continue
        repaired.append(fixed)
        first = first or m
    if first is None or sum(map(len, repaired)) < _LATIN_MOJIBAKE_MIN:
        return None
    return {"check": "mojibake", "encoding": "cp1252", "latin_recovered": sum(map(len, repaired)),
            "repaired": "".join(repaired)[:60], "window": _around(text, first.start(), first.end())}


def _cjk_mojibake(text: str) -> Evidence | None:
    """Evidence of CJK text in UTF-8 decoded as cp1252/latin-1 (or GBK): re-encoded, it decodes to mostly CJK.

    Accented Latin text re-encoded this way is not valid UTF-8 (an accent is followed by ASCII,
    not by continuation bytes), so it decodes to replacement characters and no CJK. Bytes that
    cp1252 could not show are often lost (most kana have one), so the share of CJK is taken
    over the characters that did decode.
    """
    runs = [m for m in _MOJIBAKE_RUN_RE.finditer(text) if len(m.group(0)) >= 3]
    if not runs:
        return _gbk_mojibake(text)
    raw = [bytes(_CP1252_BYTE[c] for c in m.group(0)) for m in runs]
    repaired = "".join(r.decode("utf-8", "replace") for r in raw)
    cjk = cjk_count(repaired)
    if cjk < _MOJIBAKE_MIN_CJK or cjk < 0.5 * (len(repaired) - repaired.count("\ufffd")):
        return _legacy_mojibake(text, runs, raw) or _gbk_mojibake(text)
    return {"check": "mojibake", "cjk_recovered": cjk, "repaired": repaired[:60],
            "window": _around(text, runs[0].start(), runs[0].end())}


# Legacy CJK code pages whose two-byte characters, shown as cp1252/latin-1, become pairs of accented
# letters and symbols (¾È³çÇÏ¼¼¿ä for 안녕하세요 in EUC-KR): Korean (EUC-KR) and simplified Chinese
# (GB2312), both of whose bytes lie above ASCII. Shift-JIS is not among them: its second bytes are often
# ASCII letters, which split the runs, so what a run holds does not decode back.
_LEGACY_CODECS = ("cp949", "gbk")
_LEGACY_MIN_SHARE = 0.8  # of the repaired characters that are CJK (a strict decode of Latin text is not)
_LEGACY_MIN_KINDS = 6  # different characters in the repair


def _legacy_mojibake(text: str, runs: list[re.Match[str]], raw: list[bytes]) -> Evidence | None:
    """Evidence of CJK text in a legacy code page (EUC-KR, GB2312) shown as cp1252: the runs' bytes decode
    strictly in that code page to almost nothing but CJK characters."""
    for codec in _LEGACY_CODECS:
        try:
            repaired = "".join(r.decode(codec) for r in raw)
        except UnicodeDecodeError:
            continue
        cjk = cjk_count(repaired)
        # A separator line (··········, ——————) decodes to one syllable again and again: text has variety.
        if cjk >= _MOJIBAKE_MIN_CJK and cjk >= _LEGACY_MIN_SHARE * len(repaired) and \
                len(set(repaired)) >= _LEGACY_MIN_KINDS:
            return {"check": "mojibake", "encoding": codec, "cjk_recovered": cjk, "repaired": repaired[:60],
                    "window": _around(text, runs[0].start(), runs[0].end())}
    return None


def _gbk_mojibake(text: str) -> Evidence | None:
    """Evidence of UTF-8 text decoded as GBK (鎺ㄨ崘浣犵湅 for 推荐你看): re-encoded as GBK, it is valid UTF-8.

    Real Chinese (or Japanese) re-encoded as GBK is almost never valid UTF-8: GBK's two-byte
    pairs do not follow UTF-8's lead-and-continuation pattern, so it decodes to replacement
    characters; mojibake decodes back to the text it was.
    """
    # Exact screen: each CJK character of the repair decodes from a lead byte E3-ED and two
    # continuation bytes of a run's GBK bytes, a slice of the whole text's; fewer such
    # non-overlapping triples there than the minimum cannot reach it (most text).
    raw = text.encode("gbk", "ignore")
    if len(raw.translate(None, _NON_CJK_LEAD)) < _MOJIBAKE_MIN_CJK or \
            len(_CJK_UTF8_RE.findall(raw)) < _MOJIBAKE_MIN_CJK:
        return None
    runs = [run for run in _WIDE_RUN_RE.findall(text) if len(run) >= _WIDE_MIN]
    if not runs:
        return None
    repaired = "".join(run.encode("gbk", "ignore").decode("utf-8", "replace") for run in runs)
    lost = repaired.count("\ufffd")
    cjk = cjk_count(repaired)
    if cjk < _MOJIBAKE_MIN_CJK or lost > _GBK_MAX_LOST * len(repaired):
        return None
    start = text.find(runs[0])
    return {"check": "mojibake", "encoding": "gbk", "cjk_recovered": cjk, "repaired": repaired[:60],
            "window": _around(text, start, start + len(runs[0]))}


# Bytes that are not ASCII letters or digits; deleting them leaves only those (a C-speed count).
_NON_ALPHA = bytes(b for b in range(256) if not chr(b).isalpha() or b > 127)


def _chaos_exceeds(text: str, min_chars: int, threshold: float) -> bool:
    if text.isascii():
        return threshold < 0.0  # script_chaos of ASCII text is 0
    if len(text) - text.count(" ") < min_chars:
        return threshold < 0.0  # exact: spaces are no letters, so script_chaos stays 0
    # Cheap bound: only characters above U+00FF can leave the Latin bucket, each one
    # changes script at most twice, and ASCII letters all count.
    wide = len(text) - len(text.encode("latin-1", "ignore"))
    ascii_alpha = len(text.encode("ascii", "ignore").translate(None, _NON_ALPHA))
    if ascii_alpha >= max(min_chars, 2) and 2 * wide / (ascii_alpha - 1) <= threshold:
        return False
    return script_chaos(text, min_chars=min_chars) > threshold


# A request about symbols themselves: special characters, punctuation, emoticons, a regex, ASCII art.
_ABOUT_SYMBOLS_RE = re.compile(
    r"\bspecial\s+char|\bsymbols?\b|\bpunctuation|\bemoticon|\bkaomoji|\bascii\s+art|\bregex|\bregular\s+expression"
    r"|\bpassword|\bescap|\bkeyboard|\brandom\s+(?:string|characters)|\bgibberish|\bnoise\b|\bcipher|\bobfuscat"
    r"|特殊字符|特殊符号|符号|标点|正则|密码|乱码|颜文字|特殊文字|記号|句読点|顔文字|正規表現|パスワード|文字化け"
    r"|특수\s*문자|특수\s*기호|기호|문장\s*부호|이모티콘|정규\s*(?:식|표현)|비밀번호|깨진\s*문자", re.I)
_ABOUT_LETTERS_RE = re.compile(r"자모|자음|모음|초성|중성|종성|받침|한글\s*(?:글자|철자|자판)|\bjamo\b|\bhangul\b"
                               r"|consonant|vowel|ハングル|母音|子音|韩文|韩语字母|朝鲜文|元音|辅音"
                               r"|[\u3131-\u318e]", re.I)


class TokenSoupFilter(ParamStep[SoupParams]):
    """Drop rows whose assistant text is garbled (``token_soup``)."""

    Params = SoupParams

    def process(self, rows: list[Row]) -> StepOutput:
        """Keep rows without garbled assistant turns; a drop carries the failing check's evidence."""
        kept, dropped = [], []
        for row in rows:
            msgs = row.get("messages")
            found = self.find_soup(msgs) if isinstance(msgs, list) else None
            if found is not None:
                dropped.append(self.drop(row, "token_soup", found))
            else:
                kept.append(row)
        return kept, dropped

    def is_soup(self, messages: list[Any]) -> bool:
        """True if any assistant turn is garbled."""
        return self.find_soup(messages) is not None

    def find_soup(self, messages: list[Any], *, texts: list[str] | None = None) -> Evidence | None:
        """Evidence of the first garbled assistant text (with ``message_index`` and ``part``), or None.

        ``texts`` (each message's text) may come precomputed from a fused scan.
        """
        user: Any = None
        for i, m in enumerate(messages):
            if not isinstance(m, dict):
                continue
            if m.get("role") == "user":
                user = m.get("content")
            if m.get("role") != "assistant":
                continue
            parts = [("content", texts[i] if texts is not None else message_text(m.get("content")))]
            if self.params.scan_reasoning:
                parts += [(k, v) for k in ("reasoning_content", "thinking") if isinstance(v := m.get(k), str)]
            for part, text in parts:
                found = soup_check(text, self.params) if text else None
                # A run the user asked for ("type A fifty times", "repeat 哈 20 times") is the answer;
                # asked only of a text with such a run (most never have one).
                if found is not None and found["check"] == "char_run" and \
                        asks_for_repetition(message_text(user)[:REQUEST_HEAD_CHARS]):
                    found = soup_check(text, self.params, runs=False)
                # Words split apart as the user asked (分かち書き, 分词, 띄어쓰기 practice) are the answer.
                if found is not None and found["check"] == "loose_particles" and \
                        asks_for_segmentation(message_text(user)[:REQUEST_HEAD_CHARS]):
                    found = None
                # Hangul letters taught or asked about (자음과 모음, 받침, jamo) are the subject of the reply.
                if found is not None and found["check"] == "jamo_soup" and \
                        _ABOUT_LETTERS_RE.search(message_text(user)[:REQUEST_HEAD_CHARS]):
                    found = None
                # Symbols asked for (special characters for a password, an emoticon, a regex) are the answer,
                # and so is a mash the user pasted to ask about.
                if found is not None and found["check"] == "symbol_mash" and (
                        _ABOUT_SYMBOLS_RE.search(message_text(user)[:REQUEST_HEAD_CHARS])
                        or symbol_mash(message_text(user)) is not None):
                    found = None
                # Mojibake the user showed ("names show up like JosÃ©") is the subject of the reply.
                if found is not None and found["check"] == "mojibake" and mojibake(message_text(user)) is not None:
                    found = None
                if found is not None:
                    return {**found, "message_index": i, "part": part}
        return None
