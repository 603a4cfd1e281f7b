"""Text functions shared by every cleaning step: projection, CJK ratio, tool calls, agent rows.

One module so every step sees a message the same way (the reference had three
slightly different projections and two notions of "has tool calls").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, cast

import numpy as np
import orjson

__all__ = [
    "INLINE_CODE_RE",
    "LIST_ITEM_RE",
    "THINK_BLOCK_RE",
    "assistant_indices",
    "cjk_count",
    "cjk_latin_counts",
    "cjk_ratio",
    "cjk_script_counts",
    "has_media",
    "has_payload",
    "in_voice",
    "is_agent_row",
    "is_blank",
    "message_text",
    "normalize_tool_calls",
    "reasoning_of",
    "split_think",
    "text_weight",
    "visible_len",
]

# CJK set of the reference: unified ideographs, hiragana, katakana, hangul syllables.
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7A3))
# Runs, not single characters: CJK text is mostly long runs, so far fewer match objects.
_CJK_RUN_RE = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES) + "]+")
# The same set as a lookup over UTF-16 units: every CJK character is one BMP unit, and
# surrogate halves (D800-DFFF) fall outside it, so astral characters are never counted.
_CJK_UNIT = np.zeros(0x10000, dtype=bool)
for _lo, _hi in _CJK_RANGES:
    _CJK_UNIT[_lo:_hi + 1] = True
# CJK characters as 1, ASCII letters as 2: both counts of a text from one lookup.
_CJK_LATIN_UNIT = _CJK_UNIT.astype(np.uint8)
_CJK_LATIN_UNIT[ord("A"):ord("Z") + 1] = 2
_CJK_LATIN_UNIT[ord("a"):ord("z") + 1] = 2
# Ideographs as 1, kana as 2, hangul syllables as 3: the script counts that tell zh, ja and ko apart.
_CJK_SCRIPT_UNIT = np.zeros(0x10000, dtype=np.uint8)
_CJK_SCRIPT_UNIT[0x4E00:0x9FFF + 1] = 1
_CJK_SCRIPT_UNIT[0x3040:0x30FF + 1] = 2
_CJK_SCRIPT_UNIT[0xAC00:0xD7A3 + 1] = 3
# Bytes that are not ASCII letters; deleting them leaves only the letters (a C-speed count).
_NON_LETTERS = bytes(b for b in range(256) if not (65 <= b <= 90 or 97 <= b <= 122))
# Above this length one table lookup per character beats the regex (about 3x on long text);
# below it numpy's fixed cost per call is the larger one.
_CJK_TABLE_FROM = 200

#: Closed ``<think>``/``<thinking>`` blocks (tags may be mixed), case-insensitive.
THINK_BLOCK_RE = re.compile(r"<think(?:ing)?>(.*?)</think(?:ing)?>\s*", re.I | re.S)
_THINK_OPEN_RE = re.compile(r"<think(?:ing)?>", re.I)


def message_text(content: Any, sep: str = " ") -> str:
    """Text projection of a message's content: str as-is, text parts joined with ``sep``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return sep.join(
            p["text"] for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )
    if isinstance(content, dict) and content.get("type") == "text":
        text = content.get("text")
        return text if isinstance(text, str) else ""
    return ""


def has_media(content: Any) -> bool:
    """True when content is a part list with a non-text part."""
    return isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") and p.get("type") != "text" for p in content
    )


def is_blank(msg: dict[str, Any]) -> bool:
    """True when a message has no media and only whitespace text."""
    content = msg.get("content")
    if type(content) is str:  # the common case: no parts, so no media
        return not content.strip()
    return not has_media(content) and not message_text(content).strip()


def reasoning_of(msg: dict[str, Any]) -> str:
    """The message's reasoning text: ``reasoning_content`` first, then ``thinking``."""
    for key in ("reasoning_content", "thinking"):
        value = msg.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return ""


def has_payload(msg: dict[str, Any]) -> bool:
    """Non-blank text, tool calls, reasoning or media."""
    return (not is_blank(msg)) or bool(normalize_tool_calls(msg.get("tool_calls"))) or bool(
        reasoning_of(msg)
    )


def _loads(value: str) -> Any:
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return None


def _normalize_call(item: Any) -> dict[str, Any] | None:
    if isinstance(item, str):
        item = _loads(item)
    if not isinstance(item, dict):
        return None
    fn = item.get("function")
    if isinstance(fn, str):
        decoded = _loads(fn)
        item = {**item, "function": decoded if isinstance(decoded, dict) else fn}
    return cast(dict[str, Any], item)


def normalize_tool_calls(value: Any) -> list[dict[str, Any]] | None:
    """Tool calls as a list of dicts, or None; ``'[]'``, ``''``, ``[]`` and bad JSON are None."""
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        value = _loads(value)
    if not isinstance(value, list) or not value:
        return None
    for c in value:  # a loop, not all() over a generator: this runs for every call of every row
        if type(c) is not dict or type(c.get("function")) is str:
            break
    else:
        return value  # already canonical: the common case, no copy needed
    out = []
    for item in value:
        call = _normalize_call(item)
        if call is None:
            return None
        out.append(call)
    return out


def is_agent_row(messages: Iterable[Any]) -> bool:
    """A row with a tool message or any message carrying real tool calls."""
    for m in messages:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "tool":
            return True
        if m.get("tool_calls") and normalize_tool_calls(m["tool_calls"]):
            return True
    return False


def assistant_indices(messages: list[Any]) -> list[int]:
    """Indices of assistant messages."""
    return [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"]


#: A list item line (numbered, bulleted, circled number) and its text, for ``findall`` over a reply.
LIST_ITEM_RE = re.compile(r"^[ \t]*(?:\d{1,3}[.)、]|[-*•・]|[①-⑳])[ \t]+(.+)$", re.M)
#: A code span inside a line (`df.nunique()`).
INLINE_CODE_RE = re.compile(r"`[^`\n]+`")


def text_weight(text: str) -> int:
    """Length with each CJK character counted twice (one carries about as much as two Latin ones)."""
    return len(text) + cjk_count(text)


def cjk_count(text: str) -> int:
    """Number of CJK characters (ideographs, kana, hangul syllables)."""
    if text.isascii():
        return 0
    if len(text) < _CJK_TABLE_FROM:
        return sum(map(len, _CJK_RUN_RE.findall(text)))
    units = np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)
    return int(np.count_nonzero(_CJK_UNIT[units]))


def cjk_latin_counts(text: str) -> tuple[int, int]:
    """(CJK characters, ASCII letters) of ``text``."""
    if len(text) < _CJK_TABLE_FROM or text.isascii():
        return cjk_count(text), len(text.encode("ascii", "ignore").translate(None, _NON_LETTERS))
    units = np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)
    counts = np.bincount(_CJK_LATIN_UNIT[units], minlength=3)
    return int(counts[1]), int(counts[2])


def cjk_script_counts(text: str) -> tuple[int, int, int]:
    """(ideographs, kana, hangul syllables) of ``text``: one table lookup per character."""
    if text.isascii():
        return 0, 0, 0
    units = np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)
    counts = np.bincount(_CJK_SCRIPT_UNIT[units], minlength=4)
    return int(counts[1]), int(counts[2]), int(counts[3])


def visible_len(text: str) -> int:
    """Length of ``text`` without its spaces, newlines and tabs (counted in C, not by splitting)."""
    return len(text) - text.count(" ") - text.count("\n") - text.count("\t")


def cjk_ratio(text: str) -> float:
    """CJK characters over the length of the text without spaces, newlines and tabs."""
    rest = visible_len(text)
    return cjk_count(text) / rest if rest else 0.0


def split_think(text: str) -> tuple[str, str]:
    """(think, response): think = all closed blocks plus an unclosed tail; response = the rest."""
    if "<" not in text:  # no tag at all (most replies)
        return "", text.strip()
    thinks = [m.group(1) for m in THINK_BLOCK_RE.finditer(text)]
    response = THINK_BLOCK_RE.sub(" ", text) if thinks else text
    opened = _THINK_OPEN_RE.search(response) if "<" in response else None
    if opened:  # a truncated generation: everything after the open tag is still thinking
        thinks.append(response[opened.end():])
        response = response[: opened.start()]
    return "\n".join(t.strip() for t in thinks).strip(), response.strip()


# A line spoken by a character: a short name (a title may follow it: 정 선생, Dr Kim), then a colon or an
# opening bracket (小王：, 客「, KNIGHT:).
_SPEAKER_LINE_RE = re.compile(r"^\s*[^\s:：「」\"]{1,12}(?:\s[^\s:：「」\"]{1,6})?\s*[：:「]", re.M)


def in_voice(text: str, pos: int) -> bool:
    """Whether ``pos`` lies in a character's words: a speaker-labelled line or an open quotation."""
    line_start = text.rfind("\n", 0, pos) + 1
    if _SPEAKER_LINE_RE.match(text, line_start):
        return True
    before = text[:pos]
    return before.count('"') % 2 == 1 or before.count("\u201c") > before.count("\u201d") \
        or before.count("\u300c") > before.count("\u300d")
