"""TokenSoupFilter: drop rows with garbled assistant output.

Deliberate changes from the reference: kanji and kana share one script bucket
(ordinary Japanese alternates them constantly); laughter and exclamation runs
(哈哈哈…, !!!!, ㅋㅋㅋ) need a much longer run; with ``max_chars`` both the head
and the tail are checked; reasoning text is scanned too.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import numpy as np
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


def script_chaos(text: str, *, min_chars: int = 40) -> float:
    """Share of adjacent letter/digit pairs whose scripts differ (0 below ``min_chars``)."""
    if text.isascii():
        return 0.0
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    bmp = cps < 0x10000
    idx = np.where(bmp, cps, 0).astype(np.uint16)
    keep = np.where(bmp, _ALNUM[idx], True)  # astral letters (ext. B ideographs...) count, as "other"
    buckets = np.where(bmp, _BUCKET[idx], _OTHER)[keep]
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
    if not _SAMPLE_RUN_RE.search(text[::_RUN_STEP]):  # a fifth of the text rules most runs out
        return False
    return any(m.group(1) not in _EXPRESSIVE or len(m.group(0)) >= expressive for m in _RUN_RE.finditer(text))


def soup_reason(text: str, p: SoupParams) -> str | None:
    """Name of the first garbling check ``text`` fails, or None."""
    text = _window(text.strip(), p.max_chars)
    if not text:
        return None
    n = len(text)
    if text.count("\ufffd") / n > p.replacement_char_ratio:
        return "replacement_char"
    # Each ratio check first asks whether one such character exists at all (search stops early).
    if _CONTROL_RE.search(text) and len(_CONTROL_RE.findall(text)) / n > p.control_char_ratio:
        return "control_char"
    if not text.isascii() and _PRIVATE_RE.search(text) and len(_PRIVATE_RE.findall(text)) / n > p.private_use_ratio:
        return "private_use"
    # Every special token starts with "<" or "[": fewer of those than the limit cannot reach it.
    if text.count("<") + text.count("[") >= p.special_token_count and \
            len(_SPECIAL_RE.findall(text)) >= p.special_token_count:
        return "special_tokens"
    if _run_reason(text, p.expressive_run_length):
        return "char_run"
    if _chaos_exceeds(text, p.script_chaos_min_chars, p.script_chaos_threshold):
        return "script_chaos"
    return None


# Bytes that are not ASCII letters or digits; deleting them leaves only those (a C-speed count).
_NON_ALNUM = bytes(b for b in range(256) if not chr(b).isalnum() or b > 127)


def _chaos_exceeds(text: str, min_chars: int, threshold: float) -> bool:
    if text.isascii():
        return threshold < 0.0  # script_chaos of ASCII text is 0
    # Cheap bound: only characters above U+00FF can leave the Latin bucket, each one
    # changes script at most twice, and ASCII letters and digits all count as letters.
    wide = len(text) - len(text.encode("latin-1", "ignore"))
    ascii_alnum = len(text.encode("ascii", "ignore").translate(None, _NON_ALNUM))
    if ascii_alnum >= max(min_chars, 2) and 2 * wide / (ascii_alnum - 1) <= threshold:
        return False
    return script_chaos(text, min_chars=min_chars) > threshold


class TokenSoupFilter(ParamStep[SoupParams]):
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
                texts += [v for k in ("reasoning_content", "thinking") if isinstance(v := m.get(k), str)]
            if any(soup_reason(t, self.params) for t in texts if t):
                return True
        return False
