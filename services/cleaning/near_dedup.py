"""NearDedupFilter: drop rows whose text is a near copy of an earlier row (MinHash LSH).

An optional step after exact dedup. Text = every user and assistant message,
whitespace collapsed and case-folded, cut to ``max_chars``; shingles are
character n-grams (so CJK text works without a segmenter). The first row of a
near-duplicate cluster is kept. MinHash uses a fixed seed, so results are
deterministic run to run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from datasketch import MinHash, MinHashLSH

from services.cleaning.base import Row, Step, StepOutput
from shared.schema import content_text

__all__ = ["DROP_REASON", "NearDedupFilter", "NearDedupIndex", "conversation_text"]

DROP_REASON = "near_duplicate"
_SPACE = re.compile(r"\s+")


def conversation_text(row: Row, *, max_chars: int = 4000) -> str:
    """User and assistant texts of ``row``, whitespace and case normalised, cut to ``max_chars``."""
    messages = row.get("messages")
    parts: list[str] = []
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict) and message.get("role") in ("user", "assistant"):
            parts.append(content_text(message.get("content")))
    return _SPACE.sub(" ", " ".join(parts)).strip().casefold()[:max_chars]


class NearDedupFilter(Step):
    """Drop rows whose estimated Jaccard similarity to a kept row reaches ``threshold``."""

    def __init__(
        self,
        threshold: float = 0.8,
        num_perm: int = 128,
        shingle_size: int = 5,
        *,
        max_chars: int = 4000,
        seed: int = 1,
    ) -> None:
        self.threshold = threshold
        self.num_perm = num_perm
        self.shingle_size = shingle_size
        self.max_chars = max_chars
        self.seed = seed

    def minhash(self, text: str) -> MinHash:
        """The MinHash of ``text``'s character shingles."""
        k = self.shingle_size
        shingles = {text[i : i + k] for i in range(max(1, len(text) - k + 1))}
        mh = MinHash(num_perm=self.num_perm, seed=self.seed)
        mh.update_batch([s.encode("utf-8", "surrogatepass") for s in shingles])
        return mh

    def process(self, rows: list[Row]) -> StepOutput:
        """Kept rows in input order; later near copies dropped with ``near_duplicate``."""
        kept: list[Row] = []
        dropped: list[Row] = []
        for keep, row in self.stream(rows):
            (kept if keep else dropped).append(row)
        return kept, dropped

    def stream(self, rows: Iterable[Row]) -> Iterator[tuple[bool, Row]]:
        """(kept, row) per row in order; one index spans the whole stream, so batches can feed it."""
        index = self.index()
        for row in rows:
            if index.admit(row):
                yield True, row
            else:
                yield False, self.drop(row, DROP_REASON, {"check": "near_duplicate", "threshold": self.threshold,
                                                          "jaccard": index.last_jaccard})

    def index(self) -> NearDedupIndex:
        """An empty index with this filter's settings."""
        return NearDedupIndex(self)


class NearDedupIndex:
    """The kept rows so far; ``admit(row)`` keeps a row unless it nearly copies one already kept."""

    def __init__(self, step: NearDedupFilter) -> None:
        self._step = step
        self._lsh = MinHashLSH(threshold=step.threshold, num_perm=step.num_perm)
        self._sketches: dict[int, MinHash] = {}
        #: Estimated Jaccard similarity to the kept row that the last rejected row copies.
        self.last_jaccard: float | None = None

    def admit(self, row: Row) -> bool:
        """True (and remembered) if ``row`` is not a near copy of an admitted row."""
        step = self._step
        mh = step.minhash(conversation_text(row, max_chars=step.max_chars))
        # LSH banding lets some pairs under the threshold through; Jaccard confirms.
        for key in self._lsh.query(mh):
            similarity = float(mh.jaccard(self._sketches[key]))
            if similarity >= step.threshold:
                self.last_jaccard = round(similarity, 4)
                return False
        key = len(self._sketches)
        self._lsh.insert(key, mh)
        self._sketches[key] = mh
        return True
