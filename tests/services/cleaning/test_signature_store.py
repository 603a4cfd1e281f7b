"""Signature stores: the SQLite file and the in-memory dict agree on winners."""

from __future__ import annotations

from pathlib import Path

from services.cleaning.signature_store import MemorySignatureStore, SqliteSignatureStore


def test_ties_go_to_lowest_position_whatever_the_batch_order(tmp_path: Path) -> None:
    store = SqliteSignatureStore(tmp_path / "s.db")
    store.add([(b"s", 3, 9), (b"t", 1, 4)])
    store.add([(b"s", 3, 2), (b"s", 2, 0), (b"t", 2, 8)])
    assert store.winners() == {2, 8}
    mem = MemorySignatureStore()
    mem.add([(b"s", 3, 9), (b"t", 1, 4), (b"s", 3, 2), (b"s", 2, 0), (b"t", 2, 8)])
    assert mem.winners() == {2, 8}


def test_sqlite_store_reopens_its_file(tmp_path: Path) -> None:
    store = SqliteSignatureStore(tmp_path / "s.db")
    store.add([(b"a", 1, 0), (b"b", 1, 1)])
    store.close()
    reopened = SqliteSignatureStore(tmp_path / "s.db")
    reopened.add([(b"a", 5, 7)])
    assert reopened.winners() == {7, 1}
    reopened.close()
