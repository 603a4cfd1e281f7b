"""DeadLoopFilter: drop rows whose assistant hesitates, cascades corrections or repeats itself."""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import Field

from services.cleaning.base import Row, StepOutput
from services.cleaning.markers import (
    cascade_upper_bound,
    count_cascade_starts,
    count_hesitations,
    hesitation_upper_bound,
)
from services.cleaning.params import ParamStep, StepParams
from services.cleaning.text import (
    cjk_ratio,
    is_agent_row,
    message_text,
    normalize_tool_calls,
    reasoning_of,
    split_think,
)

__all__ = ["DeadLoopFilter", "DeadLoopParams", "ngram_repetition", "repetition_exceeds"]



class DeadLoopParams(StepParams):
    """Thresholds of DeadLoopFilter: a response profile and a laxer think profile."""

    response_density: float = Field(7.0, description="Hesitation markers per 1000 chars (strict >).")
    think_density: float = Field(15.0, description="Same, for thinking text.")
    min_markers: int = Field(3, ge=1, description="Density fires only with at least this many markers.")
    response_cascade_k: int = Field(5, ge=2, description="k cascade markers within the window.")
    think_cascade_k: int = Field(20, ge=2, description="Same, for thinking text.")
    cascade_window: int = Field(800, ge=1, description="Window of the cascade signal in chars.")
    response_repetition: float = Field(0.45, description="Max n-gram repetition ratio (strict >).")
    think_repetition: float = Field(0.65, description="Same, for thinking text.")
    ngram_size: int = Field(8, ge=2, description="n of the repetition n-grams.")
    min_ngram_words: int = Field(30, ge=1, description="Repetition needs this many words (x n chars for CJK).")
    check_agent_rows: bool = Field(True, description="Also check text turns of agent rows.")
    max_repeated_tool_calls: int = Field(4, ge=0, description="Same call N times in a row is a loop (0 = off).")


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


def _distinct_grams(tokens: str | list[str], n: int) -> int:
    return len(_grams(tokens, n, 0, len(tokens) - n + 1))


def repetition_exceeds(text: str, threshold: float, *, n: int = 8, min_words: int = 30) -> bool:
    """True if the n-gram repetition ratio is over ``threshold``."""
    tokens = _tokens(text, n, min_words)
    if tokens is None:
        return False
    total = len(tokens) - n + 1
    # Grams starting with distinct tokens are distinct, so unique >= distinct tokens - (n - 1):
    # when even that bound cannot exceed the threshold, skip building the n-grams.
    if 1.0 - (len(set(tokens)) - n + 1) / total <= threshold:
        return False
    # The grams of a head part are a subset of all grams: when they alone keep the ratio at
    # or under the threshold (most texts), the rest is never built.
    head = max(0, min(total, int((1.05 - threshold) * total) + 1))
    seen = _grams(tokens, n, 0, head)
    if 1.0 - len(seen) / total <= threshold:
        return False
    seen |= _grams(tokens, n, head, total)
    return 1.0 - len(seen) / total > threshold


def _cascade(text: str, low: str, k: int, window: int) -> bool:
    starts = count_cascade_starts(text, low)
    return any(starts[i + k - 1] - starts[i] <= window for i in range(len(starts) - k + 1))


class DeadLoopFilter(ParamStep[DeadLoopParams]):
    """Drop rows with a stuck assistant turn or a repeated tool-call loop (``dead_loop``)."""

    Params = DeadLoopParams

    def process(self, rows: list[Row]) -> StepOutput:
        """Keep rows whose assistant turns are not stuck."""
        kept, dropped = [], []
        for row in rows:
            msgs = row.get("messages")
            if isinstance(msgs, list) and self.is_stuck_row(msgs):
                dropped.append(self.drop(row, "dead_loop"))
            else:
                kept.append(row)
        return kept, dropped

    def is_stuck_row(self, messages: list[Any]) -> bool:
        """True if any assistant turn is stuck, or a tool call loops."""
        agent = is_agent_row(messages)
        if agent and not self.params.check_agent_rows:
            return False
        assts = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
        if agent and self._tool_loop(assts):
            return True
        return any(self.is_stuck_message(m) for m in assts)

    def _tool_loop(self, assts: list[dict[str, Any]]) -> bool:
        limit, run, last = self.params.max_repeated_tool_calls, 0, None
        if not limit:
            return False
        for a in assts:
            calls = normalize_tool_calls(a.get("tool_calls"))
            if not calls:
                continue  # text turns between calls do not break a loop
            key = orjson.dumps([c.get("function") for c in calls], option=orjson.OPT_SORT_KEYS)
            run = run + 1 if key == last else 1
            last = key
            if run >= limit:
                return True
        return False

    def is_stuck_message(self, msg: dict[str, Any]) -> bool:
        """True if the think part or the response part of one assistant turn is stuck."""
        think, response = split_think(message_text(msg.get("content")))
        if not think:
            think = reasoning_of(msg).strip()
        p = self.params
        return self._stuck(think, p.think_density, p.think_cascade_k, p.think_repetition) or \
            self._stuck(response, p.response_density, p.response_cascade_k, p.response_repetition)

    def _stuck(self, text: str, density: float, k: int, repetition: float) -> bool:
        if not text:
            return False
        p = self.params
        low = text.lower()
        needed = max(p.min_markers, int(density * len(text) / 1000) + 1)
        if hesitation_upper_bound(text, low) >= needed and count_hesitations(text, low) >= needed:
            return True
        if cascade_upper_bound(text, low) >= k and _cascade(text, low, k, p.cascade_window):
            return True
        return repetition_exceeds(text, repetition, n=p.ngram_size, min_words=p.min_ngram_words)
