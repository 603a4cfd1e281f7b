"""TokenSoupFilter: drop rows with garbled assistant output.

Deliberate changes from the reference: kanji and kana share one script bucket
(ordinary Japanese alternates them constantly); laughter and exclamation runs
(哈哈哈…, !!!!, ㅋㅋㅋ) need a much longer run; with ``max_chars`` both the head
and the tail are checked; reasoning text is scanned too.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

from pydantic import Field

from services.cleaning.base import Row, StepOutput
from services.cleaning.params import ParamStep, StepParams
from services.cleaning.text import message_text

__all__ = ["SoupParams", "TokenSoupFilter", "script_chaos", "soup_reason"]

_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_PRIVATE_RE = re.compile("[\ue000-\uf8ff\U000f0000-\U0010ffff]")
_SPECIAL_RE = re.compile(
    r"<\|[^|>\n]{1,40}\|>|</s>|\[/?(?:PAD|UNK|SEP|CLS|MASK)\]|(?i:</?unk>|</?pad>)|<0x[0-9A-Fa-f]{2}>"
)
_RUN_EXEMPT = r"\s\-=_.*+~#|><0-9\u2013-\u2015\u2500-\u25ff\u2800-\u28ff\u30fc\uff0d"
_RUN_RE = re.compile(rf"([^{_RUN_EXEMPT}])\1{{19,}}")
_EXPRESSIVE = frozenset("!?！？哈呵嘿嘻ㅋㅎㅠㅜwW草啊")


@lru_cache(maxsize=65536)
def _bucket(ch: str) -> str:
    o = ord(ch)
    if o <= 0x024F:
        return "latin"
    for lo, hi, name in _RANGES:
        if lo <= o <= hi:
            return name
    return "other"


# Kana and kanji share the "cjk" bucket on purpose (see module docstring).
_RANGES = (
    (0x0370, 0x03FF, "greek"), (0x0400, 0x04FF, "cyrillic"), (0x0590, 0x05FF, "hebrew"),
    (0x0600, 0x06FF, "arabic"), (0x0900, 0x097F, "devanagari"), (0x0E00, 0x0E7F, "thai"),
    (0x3040, 0x30FF, "cjk"), (0x4E00, 0x9FFF, "cjk"), (0xAC00, 0xD7A3, "hangul"),
    (0xE000, 0xF8FF, "private"),
)


@lru_cache(maxsize=65536)
def _is_alnum(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LN"


def script_chaos(text: str, *, min_chars: int = 40) -> float:
    """Share of adjacent letter/digit pairs whose scripts differ (0 below ``min_chars``)."""
    if text.isascii():
        return 0.0
    buckets = [_bucket(c) for c in text if _is_alnum(c)]
    if len(buckets) < min_chars:
        return 0.0
    changes = sum(1 for a, b in zip(buckets, buckets[1:]) if a != b)
    return changes / (len(buckets) - 1)


class SoupParams(StepParams):
    """Parameters of TokenSoupFilter (reference defaults plus our additions)."""

    replacement_char_ratio: float = Field(0.02, description="Max share of U+FFFD.")
    control_char_ratio: float = Field(0.01, description="Max share of C0 control chars (not tab/LF/CR).")
    private_use_ratio: float = Field(0.03, description="Max share of private-use code points.")
    special_token_count: int = Field(20, ge=1, description="Leaked special tokens at or above this count.")
    script_chaos_threshold: float = Field(0.55, description="Max script-change share.")
    script_chaos_min_chars: int = Field(40, ge=2, description="Chaos needs this many letters/digits.")
    max_chars: int = Field(0, ge=0, description="0 = whole text; else head and tail halves of this size.")
    expressive_run_length: int = Field(200, ge=20, description="Run length for laughter/!?! runs.")
    scan_reasoning: bool = Field(True, description="Also scan reasoning_content/thinking.")


def _window(text: str, max_chars: int) -> str:
    if not max_chars or len(text) <= max_chars:
        return text
    half = max_chars // 2
    return text[:half] + "\n" + text[-half:]


def _run_reason(text: str, expressive: int) -> bool:
    for m in _RUN_RE.finditer(text):
        if m.group(1) not in _EXPRESSIVE or len(m.group(0)) >= expressive:
            return True
    return False


def soup_reason(text: str, p: SoupParams) -> str | None:
    """Name of the first garbling check ``text`` fails, or None."""
    text = _window(text.strip(), p.max_chars)
    if not text:
        return None
    n = len(text)
    if text.count("\ufffd") / n > p.replacement_char_ratio:
        return "replacement_char"
    if len(_CONTROL_RE.findall(text)) / n > p.control_char_ratio:
        return "control_char"
    if not text.isascii() and len(_PRIVATE_RE.findall(text)) / n > p.private_use_ratio:
        return "private_use"
    if ("<" in text or "[" in text) and len(_SPECIAL_RE.findall(text)) >= p.special_token_count:
        return "special_tokens"
    if _run_reason(text, p.expressive_run_length):
        return "char_run"
    if script_chaos(text, min_chars=p.script_chaos_min_chars) > p.script_chaos_threshold:
        return "script_chaos"
    return None


class TokenSoupFilter(ParamStep):
    """Drop rows whose assistant text is garbled (``token_soup``)."""

    Params = SoupParams

    def process(self, rows: list[Row]) -> StepOutput:
        """Keep rows without garbled assistant turns."""
        kept, dropped = [], []
        for row in rows:
            msgs = row.get("messages")
            if isinstance(msgs, list) and self.is_soup(msgs):
                dropped.append(self.drop(row, "token_soup"))
            else:
                kept.append(row)
        return kept, dropped

    def is_soup(self, messages: list[Any]) -> bool:
        """True if any assistant turn is garbled."""
        for m in messages:
            if not isinstance(m, dict) or m.get("role") != "assistant":
                continue
            texts = [message_text(m.get("content"))]
            if self.params.scan_reasoning:
                texts += [m.get(k) for k in ("reasoning_content", "thinking") if isinstance(m.get(k), str)]
            if any(soup_reason(t, self.params) for t in texts if t):
                return True
        return False
