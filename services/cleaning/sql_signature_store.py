"""SqlSignatureStore: the dedup signature store in the database, one set per cleaning job.

The async twin of ``SignatureStore``: batches of a distributed job add their
kept rows' signatures concurrently; an upsert keeps, per signature, the row
with the most messages (ties to the lowest position), so the winners do not
depend on the order batches finish in, and re-adding a batch changes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from services.cleaning.signature_store import MemorySignatureStore, SignatureEntry
from shared.db.models import DedupSignatureRow

__all__ = ["SqlSignatureStore"]


class SqlSignatureStore:
    """Signature entries of one job in the ``dedup_signature`` table (flushes, never commits)."""

    def __init__(self, session: AsyncSession, job_id: uuid.UUID) -> None:
        self.session = session
        self.job_id = job_id

    async def add(self, batch: Iterable[SignatureEntry]) -> None:
        """Upsert entries, keeping the better (count, position) per signature."""
        # One statement may not touch a signature twice, and sorted keys keep lock order the same
        # in concurrent batches (no deadlocks), so reduce and sort first.
        best = MemorySignatureStore()
        best.add(batch)
        values = [{"job_id": self.job_id, "sig": sig, "n": n, "pos": pos}
                  for sig, (n, pos) in sorted(best.best.items())]
        if not values:
            return
        dialect = self.session.bind.dialect.name if self.session.bind is not None else "postgresql"
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        stmt = insert(DedupSignatureRow).values(values)
        table = DedupSignatureRow.__table__
        better = (stmt.excluded.n > table.c.n) | ((stmt.excluded.n == table.c.n) & (stmt.excluded.pos < table.c.pos))
        stmt = stmt.on_conflict_do_update(
            index_elements=["job_id", "sig"], set_={"n": stmt.excluded.n, "pos": stmt.excluded.pos}, where=better
        )
        await self.session.execute(stmt)

    async def winners(self) -> set[int]:
        """Row positions that survive dedup."""
        rows = await self.session.execute(select(DedupSignatureRow.pos).where(DedupSignatureRow.job_id == self.job_id))
        return set(rows.scalars())
