"""DedupFilter: global, longest-wins dedup on a (first real user turn, first reply) signature.

Semantics of the reference: one survivor per signature, the row with the most
messages, ties to the first seen; kept rows stay in input order; the drop
reason is ``duplicate``. Differences, on purpose:

- ``normalize=True`` (default) collapses whitespace runs and case before
  hashing, so copies that differ only in spacing or case collapse too
  (``normalize=False`` hashes the stripped text as the reference does);
- no hash of the whole message list is needed (an exact copy of the winner
  loses the tie anyway), so unusual content never crashes the step;
- ``stream_dedup`` does the same over data that does not fit in memory, in two
  passes through a ``SignatureStore`` (SQLite file here, Postgres later).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import orjson

from services.cleaning.base import Row, Step, StepOutput
from services.cleaning.signature_store import SignatureEntry, SignatureStore
from shared.iterutil import batched
from shared.schema import content_text

__all__ = ["DROP_REASON", "DedupFilter", "is_real_user", "row_signature", "stream_dedup"]

DROP_REASON = "duplicate"
_INJECTED = re.compile(
    r"<(?:system-reminder|system_reminder|context|user_info|attached_files)[ >]", re.IGNORECASE
)
_SPACE = re.compile(r"\s+")


def _text(message: Any) -> str:
    return content_text(message.get("content")).strip() if isinstance(message, dict) else ""


def is_real_user(message: Any) -> bool:
    """A user turn with text that is not a system-injected block (``<system-reminder>`` and kin)."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return False
    text = _text(message)
    return bool(text) and _INJECTED.match(text) is None


def _head_tail(text: str, n: int, normalize: bool) -> str:
    if normalize:
        text = _SPACE.sub(" ", text).casefold()
    return text if len(text) <= 2 * n else text[:n] + text[-n:]


def _assistant_texts(messages: Sequence[Any], start: int) -> Iterator[str]:
    for message in messages[start:]:
        if isinstance(message, dict) and message.get("role") == "assistant":
            text = _text(message)
            if text:
                yield text


def _sig_texts(messages: Sequence[Any]) -> tuple[str, str]:
    for i, message in enumerate(messages):
        if is_real_user(message):
            return _text(message), next(_assistant_texts(messages, i + 1), "")
    replies = _assistant_texts(messages, 0)
    return next(replies, ""), next(replies, "")


def row_signature(
    row: Row, *, prefix_chars: int = 100, asst_chars: int = 100, normalize: bool = True
) -> bytes:
    """MD5 of [head/tail of the first real user text, head/tail of the first reply after it]."""
    messages = row.get("messages")
    user, reply = _sig_texts(messages if isinstance(messages, list) else [])
    pair = [_head_tail(user, prefix_chars, normalize), _head_tail(reply, asst_chars, normalize)]
    return hashlib.md5(orjson.dumps(pair), usedforsecurity=False).digest()


def _evidence(sig: bytes, kept_position: int | None) -> dict[str, Any]:
    """Evidence of a duplicate: the shared signature and, when known, the kept row's batch position."""
    out: dict[str, Any] = {"check": "duplicate", "signature": sig.hex()}
    if kept_position is not None:
        out["kept_position"] = kept_position
    return out


def _n_messages(row: Row) -> int:
    messages = row.get("messages")
    return len(messages) if isinstance(messages, list) else 0


class DedupFilter(Step):
    """Keep one row per signature: the one with the most messages, the first seen on ties."""

    def __init__(
        self, prefix_chars: int = 100, asst_chars: int = 100, *, normalize: bool = True
    ) -> None:
        self.prefix_chars = prefix_chars
        self.asst_chars = asst_chars
        self.normalize = normalize

    def signature(self, row: Row) -> bytes:
        """This filter's signature of ``row``."""
        return row_signature(
            row,
            prefix_chars=self.prefix_chars,
            asst_chars=self.asst_chars,
            normalize=self.normalize,
        )

    def process(self, rows: list[Row]) -> StepOutput:
        """Kept rows in input order; dropped rows in the order they were rejected or demoted."""
        winner: dict[bytes, int] = {}
        dropped: list[Row] = []
        for pos, row in enumerate(rows):
            sig = self.signature(row)
            best = winner.get(sig)
            if best is None:
                winner[sig] = pos
            elif _n_messages(row) > _n_messages(rows[best]):
                dropped.append(self.drop(rows[best], DROP_REASON, _evidence(sig, pos)))
                winner[sig] = pos
            else:
                dropped.append(self.drop(row, DROP_REASON, _evidence(sig, best)))
        keep = sorted(winner.values())
        return [rows[i] for i in keep], dropped

    def entries(self, rows: Iterable[Row], *, start: int = 0) -> Iterator[SignatureEntry]:
        """Pass 1 of streaming dedup: (signature, message count, position) per row."""
        for pos, row in enumerate(rows, start=start):
            yield self.signature(row), _n_messages(row), pos


def stream_dedup(
    open_rows: Callable[[], Iterable[Row]],
    store: SignatureStore,
    *,
    dedup: DedupFilter | None = None,
    batch_size: int = 10_000,
) -> Iterator[tuple[bool, Row]]:
    """Two-pass global dedup: ``open_rows()`` is read twice; yields (kept, row) in input order.

    Dropped rows come back marked with ``drop_reason`` so the caller can log them.
    """
    dedup = dedup or DedupFilter()
    for batch in batched(dedup.entries(open_rows()), batch_size):
        store.add(batch)
    winners = store.winners()
    for pos, row in enumerate(open_rows()):
        yield (True, row) if pos in winners else (False, dedup.drop(row, DROP_REASON,
                                                                     _evidence(dedup.signature(row), None)))
