"""Where the gateway stores trace records (``shared.traces.TraceRecord``).

Storage sits behind ``TraceSink`` so the database table can replace the
in-memory sink without touching the proxy.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Protocol, runtime_checkable

from shared.traces import TraceRecord

__all__ = ["InMemoryTraceSink", "TraceSink"]


@runtime_checkable
class TraceSink(Protocol):
    """Where trace records go (the database in production, memory in the embedded default)."""

    async def write(self, record: TraceRecord) -> None:
        """Store one record."""
        ...

    async def session(self, session_id: str) -> list[TraceRecord]:
        """All records of a session, in sequence order."""
        ...


class InMemoryTraceSink:
    """Keeps records in process memory, indexed by session."""

    def __init__(self) -> None:
        self.records: list[TraceRecord] = []
        self._by_session: dict[str, list[TraceRecord]] = defaultdict(list)

    async def write(self, record: TraceRecord) -> None:
        """Store one record."""
        self.records.append(record)
        if record.session_id is not None:
            self._by_session[record.session_id].append(record)

    async def session(self, session_id: str) -> list[TraceRecord]:
        """All records of a session, in sequence order."""
        return sorted(self._by_session.get(session_id, []), key=lambda r: r.sequence)
