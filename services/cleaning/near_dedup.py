"""NearDedupFilter: drop rows whose text is a near copy of an earlier row (MinHash LSH).

An optional step after exact dedup. Text = every user and assistant message,
whitespace collapsed and case-folded, cut to ``max_chars``; shingles are
character n-grams (so CJK text works without a segmenter). The first row of a
near-duplicate cluster is kept. MinHash uses a fixed seed, so results are
deterministic run to run. Signatures and band keys are kept in a SQLite file (a temporary
one by default), so memory does not grow with the number of rows.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
from datasketch import MinHash
from datasketch.lsh import _optimal_param

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
        with self.index() as index:
            yield from self._stream(index, rows)

    def _stream(self, index: NearDedupIndex, rows: Iterable[Row]) -> Iterator[tuple[bool, Row]]:
        for row in rows:
            if index.admit(row):
                yield True, row
            else:
                yield False, self.drop(row, DROP_REASON, {"check": "near_duplicate", "threshold": self.threshold,
                                                          "jaccard": index.last_jaccard})

    def index(self, path: str | Path | None = None) -> NearDedupIndex:
        """An index with this filter's settings, in the SQLite file ``path`` (a temporary one when None)."""
        return NearDedupIndex(self, path)


class NearDedupIndex:
    """The kept rows so far; ``admit(row)`` keeps a row unless it nearly copies one already kept.

    Signatures and LSH band keys live in a SQLite file, not in memory, so the index grows on
    disk and memory stays flat (a bounded page cache) however many rows stream through:
    1,000,000 rows stay far under 2 GiB (``bench/dedup.py --near`` measures the peak RSS).
    Banding is datasketch's own (the same bands and rows per band for the threshold), each
    band stored as a 64-bit hash of its bytes; a candidate is confirmed by the signatures'
    Jaccard estimate, so verdicts are those of an in-memory MinHash LSH.
    """

    def __init__(self, step: NearDedupFilter, path: str | Path | None = None, *,
                 cache_mib: int = 64) -> None:
        self._step = step
        self._bands, self._rows = _optimal_param(step.threshold, step.num_perm, 0.5, 0.5)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if path is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="trajforge-near-")
            path = Path(self._tmp.name) / "minhash.sqlite"
        self._db = sqlite3.connect(str(path))
        for pragma in ("journal_mode=OFF", "synchronous=OFF", f"cache_size=-{cache_mib * 1024}", "temp_store=FILE"):
            self._db.execute(f"PRAGMA {pragma}")
        self._db.execute("CREATE TABLE IF NOT EXISTS sig (id INTEGER PRIMARY KEY, hv BLOB NOT NULL)")
        self._db.execute("CREATE TABLE IF NOT EXISTS band (b INTEGER NOT NULL, k INTEGER NOT NULL, "
                         "id INTEGER NOT NULL)")
        self._db.execute("CREATE INDEX IF NOT EXISTS band_key ON band (b, k)")
        self._count = int(self._db.execute("SELECT count(*) FROM sig").fetchone()[0])
        self._pending = 0
        self._closed = False
        #: Estimated Jaccard similarity to the kept row that the last rejected row copies.
        self.last_jaccard: float | None = None

    def __len__(self) -> int:
        return self._count

    def _band_keys(self, hv: np.ndarray) -> list[int]:
        r = self._rows
        # A signed 64-bit key per band: SQLite's INTEGER, indexed compactly.
        return [int.from_bytes(hashlib.blake2b(hv[i * r:(i + 1) * r].tobytes(), digest_size=8).digest(),
                               "little", signed=True) for i in range(self._bands)]

    def admit(self, row: Row) -> bool:
        """True (and remembered) if ``row`` is not a near copy of an admitted row."""
        step = self._step
        hv = np.asarray(step.minhash(conversation_text(row, max_chars=step.max_chars)).hashvalues, dtype=np.uint64)
        keys = self._band_keys(hv)
        cur = self._db.cursor()
        candidates: set[int] = set()
        for b, k in enumerate(keys):
            candidates.update(i for (i,) in cur.execute("SELECT id FROM band WHERE b = ? AND k = ?", (b, k)))
        for cid in sorted(candidates):
            (blob,) = cur.execute("SELECT hv FROM sig WHERE id = ?", (cid,)).fetchone()
            similarity = float(np.count_nonzero(np.frombuffer(blob, dtype=np.uint64) == hv)) / len(hv)
            if similarity >= step.threshold:
                self.last_jaccard = round(similarity, 4)
                return False
        rid = self._count
        cur.execute("INSERT INTO sig (id, hv) VALUES (?, ?)", (rid, hv.tobytes()))
        cur.executemany("INSERT INTO band (b, k, id) VALUES (?, ?, ?)", [(b, k, rid) for b, k in enumerate(keys)])
        self._count += 1
        self._pending += 1
        if self._pending >= 10_000:
            self._db.commit()
            self._pending = 0
        return True

    def close(self) -> None:
        """Commit and close the database (and remove it when it was a temporary file); idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._tmp is None:
            self._db.commit()
        self._db.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> NearDedupIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
