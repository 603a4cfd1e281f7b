"""The job row's lock holds on SQLite too: counters changed under it are never lost to a concurrent shard."""

from __future__ import annotations

import asyncio
from pathlib import Path

from services.rollout import repository as repo
from shared.db.migrate import upgrade
from shared.db.models import RolloutJobRow
from shared.db.session import create_engine_for, make_sessionmaker
from shared.settings import Settings


async def _bump_many(url: str, writers: int) -> int:
    engine = create_engine_for(Settings(database_url=url))
    maker = make_sessionmaker(engine)
    try:
        async with maker() as session:
            job = RolloutJobRow(spec={}, counts={"trajectories": 0})
            session.add(job)
            await session.commit()
            job_id = job.id

        async def bump() -> None:
            async with maker() as session:
                locked = await repo.lock_job(session, job_id)
                seen = int(locked.counts.get("trajectories", 0))
                await asyncio.sleep(0.01)  # another shard's store runs meanwhile, as in a job
                locked.counts = {"trajectories": seen + 1}
                await session.commit()

        await asyncio.gather(*(bump() for _ in range(writers)))
        async with maker() as session:
            return int((await session.get(RolloutJobRow, job_id)).counts["trajectories"])  # type: ignore[union-attr]
    finally:
        await engine.dispose()


async def test_concurrent_counter_updates_under_the_job_lock_all_land_on_sqlite(tmp_path: Path) -> None:
    # Without a write lock taken first, each shard read the same counts and the last commit won
    # (a demo job once showed 12 of its 16 trajectories).
    url = f"sqlite+aiosqlite:///{tmp_path / 'jobs.db'}"
    await asyncio.to_thread(upgrade, url)
    assert await _bump_many(url, 8) == 8
