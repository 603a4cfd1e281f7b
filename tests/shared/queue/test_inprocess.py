"""The in-process dispatcher runs the same task bodies, idempotently, after commit."""

from __future__ import annotations

import uuid

from sqlalchemy import func, select

from shared.db.models import DatasetRow, DatasetRowRow, TaskExecutionRow
from shared.queue import InProcessDispatcher, enqueue_after_commit, task_key
from shared.queue.dispatch import discard_after_commit, flush_after_commit
from tests.shared.queue import tasks_for_tests  # noqa: F401  (registers tests.record_effect)


async def _dataset(session) -> uuid.UUID:  # type: ignore[no-untyped-def]
    ds = DatasetRow(name="inprocess")
    session.add(ds)
    await session.commit()
    return ds.id


async def test_task_runs_once_even_when_sent_twice(session, sessionmaker, settings) -> None:  # type: ignore[no-untyped-def]
    ds_id = await _dataset(session)
    dispatcher = InProcessDispatcher(settings, sessionmaker)
    kwargs = {"dataset_id": str(ds_id), "index": 3, "hold_s": 0.0, "counter": "unused"}
    await dispatcher.send("tests.record_effect", kwargs)
    await dispatcher.drain()
    await dispatcher.send("tests.record_effect", kwargs)
    await dispatcher.drain()
    execution = await session.get(TaskExecutionRow, task_key("tests.record_effect", kwargs))
    await session.refresh(execution)
    assert execution.status == "succeeded" and execution.attempts == 1
    assert execution.result == {"written": 1, "attempt": 1}
    count = await session.scalar(select(func.count()).select_from(DatasetRowRow)
                                 .where(DatasetRowRow.dataset_id == ds_id))
    assert count == 1


async def test_enqueue_after_commit_sends_only_committed_work(session, sessionmaker, settings) -> None:  # type: ignore[no-untyped-def]
    ds_id = await _dataset(session)
    dispatcher = InProcessDispatcher(settings, sessionmaker)
    dropped = {"dataset_id": str(ds_id), "index": 1, "hold_s": 0.0, "counter": "unused"}
    kept = {"dataset_id": str(ds_id), "index": 2, "hold_s": 0.0, "counter": "unused"}
    enqueue_after_commit(session, dispatcher, "tests.record_effect", **dropped)
    discard_after_commit(session)  # what a rollback does
    enqueue_after_commit(session, dispatcher, "tests.record_effect", **kept)
    await session.commit()
    await flush_after_commit(session)
    await dispatcher.drain()
    rows = (await session.execute(select(DatasetRowRow.row_index).where(DatasetRowRow.dataset_id == ds_id))).scalars()
    assert sorted(rows) == [2]


async def test_a_transient_failure_is_retried_with_backoff_like_celery(session, sessionmaker, settings) -> None:  # type: ignore[no-untyped-def]
    dispatcher = InProcessDispatcher(settings.model_copy(update={"queue_retry_backoff_s": 0.01}), sessionmaker)
    kwargs = {"fail_until": 3, "run": uuid.uuid4().hex}
    await dispatcher.send("tests.flaky", kwargs)
    await dispatcher.drain()
    execution = await session.get(TaskExecutionRow, task_key("tests.flaky", kwargs))
    await session.refresh(execution)
    # Two transient failures, then the third run (within max_retries=2) succeeds.
    assert execution.status == "succeeded" and execution.attempts == 3
    assert execution.result == {"attempt": 3}


async def test_retries_run_out_after_max_retries(session, sessionmaker, settings) -> None:  # type: ignore[no-untyped-def]
    dispatcher = InProcessDispatcher(settings.model_copy(update={"queue_retry_backoff_s": 0.01}), sessionmaker)
    kwargs = {"fail_until": 10, "run": uuid.uuid4().hex}
    await dispatcher.send("tests.flaky", kwargs)
    await dispatcher.drain()
    execution = await session.get(TaskExecutionRow, task_key("tests.flaky", kwargs))
    await session.refresh(execution)
    assert execution.attempts == 3 and execution.status != "succeeded"  # one run + max_retries, then given up
