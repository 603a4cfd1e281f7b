"""A task survives a worker killed mid-task: redelivered, and its effect recorded once."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import redis
from sqlalchemy import func, select

from shared.db.models import DatasetRow, DatasetRowRow, TaskExecutionRow
from shared.db.session import create_engine_for, make_sessionmaker
from shared.queue import configure_celery, task_key
from shared.settings import Settings
from tests.workers import REDIS_TEST_URL, Workers, wait_until


async def _make_dataset(settings: Settings) -> uuid.UUID:
    engine = create_engine_for(settings)
    async with make_sessionmaker(engine)() as session:
        ds = DatasetRow(name="worker-kill")
        session.add(ds)
        await session.commit()
        ds_id = ds.id
    await engine.dispose()
    return ds_id


async def _state(settings: Settings, ds_id: uuid.UUID, key: str) -> tuple[int, TaskExecutionRow | None]:
    engine = create_engine_for(settings)
    async with make_sessionmaker(engine)() as session:
        rows = await session.scalar(select(func.count()).select_from(DatasetRowRow).where(DatasetRowRow.dataset_id == ds_id))
        execution = await session.get(TaskExecutionRow, key)
    await engine.dispose()
    return int(rows or 0), execution


def test_killed_worker_task_is_redelivered_and_recorded_once(settings: Settings, tmp_path: Path) -> None:
    workers = Workers(settings, tmp_path, prefix="queue", include=["tests.shared.queue.tasks_for_tests"],
                      visibility_timeout_s=3)
    local = workers.settings
    r = redis.Redis.from_url(REDIS_TEST_URL)
    counter = f"{workers.queue}:runs"
    ds_id = asyncio.run(_make_dataset(local))
    kwargs = {"dataset_id": str(ds_id), "index": 0, "hold_s": 60.0, "counter": counter}
    key = task_key("tests.record_effect", kwargs)
    first = workers.start()
    try:
        configure_celery(local).send_task("tests.record_effect", kwargs=kwargs, queue=workers.queue)
        wait_until(lambda: int(r.get(counter) or 0) >= 1, 60, "the first attempt to record its effect", workers.tail)
        workers.kill(first)  # SIGKILL mid-task: effect written, task not acknowledged
        workers.start()

        def finished() -> bool:
            execution = asyncio.run(_state(local, ds_id, key))[1]
            return execution is not None and execution.status == "succeeded"

        wait_until(finished, 90, "the redelivered task to succeed", workers.tail)
    finally:
        workers.stop_all()
    rows, execution = asyncio.run(_state(local, ds_id, key))
    assert int(r.get(counter) or 0) == 2, workers.tail()  # it really ran twice
    assert rows == 1  # and its effect exists once
    assert execution is not None and execution.attempts == 2 and execution.status == "succeeded"
    r.delete(counter)
