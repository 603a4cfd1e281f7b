"""Where the streaming dedup spills (signature, message count, row position) triples.

The interface is two calls: ``add(batch)`` during pass 1 and ``winners()``
after it. A winner is, per signature, the row with the most messages; ties go
to the lowest position, so the result does not depend on the order of batches.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

__all__ = ["MemorySignatureStore", "SignatureStore", "SqliteSignatureStore", "SignatureEntry"]

#: (signature digest, number of messages, row position)
SignatureEntry = tuple[bytes, int, int]


class SignatureStore(Protocol):
    """Collects signature entries and answers which row positions win."""

    def add(self, batch: Iterable[SignatureEntry]) -> None:
        """Record a batch of entries."""

    def winners(self) -> set[int]:
        """Row positions that survive dedup."""


def _better(n: int, pos: int, best: tuple[int, int]) -> bool:
    return n > best[0] or (n == best[0] and pos < best[1])


class MemorySignatureStore:
    """The store as a dict: fastest, for data whose signatures fit in memory."""

    def __init__(self) -> None:
        self._best: dict[bytes, tuple[int, int]] = {}

    @property
    def best(self) -> dict[bytes, tuple[int, int]]:
        """signature -> (message count, position) of its current winner."""
        return self._best

    def add(self, batch: Iterable[SignatureEntry]) -> None:
        """Keep the best (count, position) per signature."""
        best = self._best
        for sig, n, pos in batch:
            cur = best.get(sig)
            if cur is None or _better(n, pos, cur):
                best[sig] = (n, pos)

    def winners(self) -> set[int]:
        """Row positions that survive dedup."""
        return {pos for _, pos in self._best.values()}


class SqliteSignatureStore:
    """The store in an SQLite file: memory stays flat however many rows go through."""

    def __init__(self, path: str | Path) -> None:
        self._db = sqlite3.connect(str(path))
        self._db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA temp_store=FILE;"
            "CREATE TABLE IF NOT EXISTS dedup_signature (sig BLOB PRIMARY KEY,"
            " n INTEGER NOT NULL, pos INTEGER NOT NULL) WITHOUT ROWID;"
        )

    def add(self, batch: Iterable[SignatureEntry]) -> None:
        """Upsert entries, keeping the better (count, position) per signature."""
        self._db.executemany(
            "INSERT INTO dedup_signature (sig, n, pos) VALUES (?, ?, ?)"
            " ON CONFLICT(sig) DO UPDATE SET"
            " n = excluded.n, pos = excluded.pos"
            " WHERE excluded.n > dedup_signature.n"
            " OR (excluded.n = dedup_signature.n AND excluded.pos < dedup_signature.pos)",
            batch,
        )
        self._db.commit()

    def winners(self) -> set[int]:
        """Row positions that survive dedup."""
        return {pos for (pos,) in self._db.execute("SELECT pos FROM dedup_signature")}

    def close(self) -> None:
        """Close the database file."""
        self._db.close()
