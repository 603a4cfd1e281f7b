"""`locked_row` on the embedded SQLite: read-modify-writes of one row from concurrent sessions all land."""

from __future__ import annotations

import asyncio
from pathlib import Path

from shared.db.locking import locked_row
from shared.db.migrate import upgrade
from shared.db.models import OpdJobRow
from shared.db.session import create_engine_for, make_sessionmaker
from shared.settings import Settings


async def test_concurrent_updates_of_a_locked_row_are_not_lost(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'lock.db'}"
    await asyncio.to_thread(upgrade, url)
    engine = create_engine_for(Settings(database_url=url))
    maker = make_sessionmaker(engine)
    try:
        async with maker() as session:
            row = OpdJobRow(name="lock", spec={}, rounds=[])
            session.add(row)
            await session.commit()
            row_id = row.id

        async def append(i: int) -> None:
            async with maker() as session:
                locked = await locked_row(session, OpdJobRow, row_id)
                assert locked is not None
                rounds = list(locked.rounds)
                await asyncio.sleep(0.01)  # the other writers run meanwhile
                locked.rounds = [*rounds, i]
                await session.commit()

        await asyncio.gather(*(append(i) for i in range(6)))
        async with maker() as session:
            final = await session.get(OpdJobRow, row_id)
            assert final is not None and sorted(final.rounds) == list(range(6))
            assert await locked_row(session, OpdJobRow, row_id.__class__(int=0)) is None  # no such row
    finally:
        await engine.dispose()
