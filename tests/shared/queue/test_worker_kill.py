"""A task survives a worker killed mid-task: redelivered, and its effect recorded once."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import redis
from sqlalchemy import func, select

from shared.db.models import DatasetRow, DatasetRowRow, TaskExecutionRow
from shared.db.session import create_engine_for, make_sessionmaker
from shared.queue import configure_celery, task_key
from shared.settings import Settings
from tests.conftest import REDIS_URL, REPO_ROOT

REDIS_TEST_URL = REDIS_URL.rsplit("/", 1)[0] + "/15"


def _start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "shared.cli", "worker", "--pool", "solo", "--concurrency", "1",
           "--include", "tests.shared.queue.tasks_for_tests"]
    return subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _wait(predicate, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


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
    queue = f"test-{uuid.uuid4().hex[:8]}"
    local = settings.model_copy(update={"redis_url": REDIS_TEST_URL, "queue_name": queue,
                                        "queue_visibility_timeout_s": 3})
    env = {**os.environ, "TRAJFORGE_DATABASE_URL": local.database_url, "TRAJFORGE_REDIS_URL": REDIS_TEST_URL,
           "TRAJFORGE_QUEUE_NAME": queue, "TRAJFORGE_QUEUE_VISIBILITY_TIMEOUT_S": "3",
           "TRAJFORGE_HOME": str(tmp_path), "PYTHONPATH": str(REPO_ROOT)}
    r = redis.Redis.from_url(REDIS_TEST_URL)
    counter = f"{queue}:runs"
    ds_id = asyncio.run(_make_dataset(local))
    kwargs = {"dataset_id": str(ds_id), "index": 0, "hold_s": 60.0, "counter": counter}
    log = tmp_path / "worker.log"
    first = _start_worker(env, log)
    try:
        configure_celery(local).send_task("tests.record_effect", kwargs=kwargs, queue=queue)
        _wait(lambda: int(r.get(counter) or 0) >= 1, 60, "the first attempt to record its effect")
        os.killpg(first.pid, signal.SIGKILL)  # mid-task: effect written, task not acknowledged
        first.wait(10)
        second = _start_worker(env, log)
        try:
            key = task_key("tests.record_effect", kwargs)

            def finished() -> bool:
                execution = asyncio.run(_state(local, ds_id, key))[1]
                return execution is not None and execution.status == "succeeded"

            _wait(finished, 90, "the redelivered task to succeed")
        finally:
            os.killpg(second.pid, signal.SIGTERM)
            second.wait(20)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    rows, execution = asyncio.run(_state(local, ds_id, key))
    assert int(r.get(counter) or 0) == 2, log.read_text()[-3000:]  # it really ran twice
    assert rows == 1  # and its effect exists once
    assert execution is not None and execution.attempts == 2 and execution.status == "succeeded"
    r.delete(counter)
