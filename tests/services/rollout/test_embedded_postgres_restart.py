"""Postgres restarted mid-job with no broker: the in-process runner retries shards as Celery would.

The cluster is private to the test (``tests.private_stores``). The policy is SCRIPTED with a delay,
so shards are mid-flight when the database goes down; the queue's in-process runner, the env,
scoring and storage are real.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from services.rollout import service, tasks
from shared.db.migrate import upgrade
from shared.db.models import TrajectoryGroupRow, TrajectoryRow
from shared.errors import ServiceUnavailable
from shared.queue import TaskContext
from shared.queue.dispatch import flush_after_commit
from shared.settings import Settings
from tests.private_stores import PrivatePostgres
from tests.services.rollout import scripted
from tests.services.rollout.test_service import Live, job_body

# No skip without Postgres binaries: the suite's set-up installs them, and PrivatePostgres fails loudly without.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TASKS = 6


@pytest.fixture
def cluster() -> Iterator[PrivatePostgres]:
    # Not under pytest's 0700 tmp root: the postgres user must reach the cluster's directory.
    scratch = Path(tempfile.mkdtemp(prefix="trajforge-embedded-pg-"))
    scratch.chmod(0o755)
    pg = PrivatePostgres(scratch / "pg").start()
    try:
        yield pg
    finally:
        pg.crash()
        shutil.rmtree(scratch, ignore_errors=True)


async def _groups_and_rows(live: Live, job_id: uuid.UUID) -> tuple[list[TrajectoryGroupRow], list[TrajectoryRow]]:
    async with live.maker() as session:
        groups = list((await session.scalars(select(TrajectoryGroupRow)
                                             .where(TrajectoryGroupRow.job_id == job_id))).all())
        rows = list((await session.scalars(select(TrajectoryRow).where(TrajectoryRow.job_id == job_id))).all())
    return groups, rows


async def test_postgres_restart_mid_job_is_retried_in_process_and_every_group_stored_once(
    cluster: PrivatePostgres, settings: Settings,
) -> None:
    await asyncio.to_thread(upgrade, cluster.url)
    local = settings.model_copy(update={"database_url": cluster.url, "redis_url": "", "rollout_poll_s": 0.05,
                                        "queue_retry_backoff_s": 1.0, **scripted.HANGING_ENV})
    live = Live(local)
    try:
        requests = [f"What is the status of item A{i}?" for i in range(TASKS)]
        job_id = await live.create(job_body(*requests, delay_s=0.4, shard_size=1))
        await asyncio.sleep(1.0)  # shards are mid-flight: policy calls take 0.4 s each
        await asyncio.to_thread(cluster.crash)
        await asyncio.sleep(1.5)
        await asyncio.to_thread(cluster.start)
        await asyncio.wait_for(live.dispatcher.drain(), timeout=180)
        async with live.maker() as session:
            job = await service.read_job(session, job_id)
        groups, rows = await _groups_and_rows(live, job_id)
        # Every shard was retried once the database was back: the job ends with every group stored ...
        assert job.status == "succeeded", job
        assert len(groups) == TASKS and all(g.status == "done" for g in groups), [(g.task_id, g.status) for g in groups]
        # ... and each member exactly once.
        members: dict[uuid.UUID | None, list[int]] = {}
        for row in rows:
            members.setdefault(row.group_id, []).append(row.sample_index)
            assert row.stop_reason, row
        assert len({r.id for r in rows}) == len(rows) == TASKS * 2
        assert all(sorted(m) == [0, 1] for m in members.values()), members
        assert job.done_groups == TASKS and job.counts["trajectories"] == TASKS * 2
    finally:
        await live.dispatcher.drain()
        await live.engine.dispose()


class _Held:
    """A dispatcher that keeps what it is sent (the shard is failed by hand below)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, object]]] = []

    async def send(self, name: str, kwargs: dict[str, object]) -> None:
        self.sent.append((name, kwargs))


async def test_a_shard_failure_is_recorded_once_the_database_is_back(cluster: PrivatePostgres,
                                                                     settings: Settings) -> None:
    await asyncio.to_thread(upgrade, cluster.url)
    local = settings.model_copy(update={"database_url": cluster.url, "redis_url": "", "queue_retry_backoff_s": 0.5})
    live = Live(local)
    try:
        held = _Held()
        async with live.maker() as session:
            read = await service.create_job(session, held, job_body("What is the status of item A1?"))
            await session.commit()
            await flush_after_commit(session)
        job_id = uuid.UUID(read.id)
        assert [name for name, _ in held.sent] == [service.RUN_SHARD_TASK]
        await asyncio.to_thread(cluster.crash)
        ctx = TaskContext(settings=local, sessionmaker=live.maker, key="k", attempt=tasks.MAX_SHARD_ATTEMPTS)

        async def restart_later() -> None:
            await asyncio.sleep(2.0)
            await asyncio.to_thread(cluster.start)

        restart = asyncio.create_task(restart_later())
        # The write that settles the job waits for the database instead of leaving the job running.
        await tasks._fail(ctx, str(job_id), 0, ServiceUnavailable("the gateway is away"))
        await restart
        async with live.maker() as session:
            job = await service.read_job(session, job_id)
        groups, _ = await _groups_and_rows(live, job_id)
        assert job.status == "failed" and job.error and "the gateway is away" in job.error, job
        assert [g.status for g in groups] == ["failed"]
    finally:
        await live.engine.dispose()
