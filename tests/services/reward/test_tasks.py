"""The rescore task: batches in-process and on a real Celery worker; a batch run twice records each score once."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import delete, func, select

import services.reward.tasks  # noqa: F401 - registers the task under test
from services.reward import repository
from services.reward.deps import task_rollout_client
from services.reward.rescore import RESCORE_TASK, rescore_batch
from services.reward.spec import ComponentSpec, RewardSpec
from shared.db.models import RewardRow, RolloutJobRow, TaskExecutionRow, TrajectoryRow
from shared.db.session import create_engine_for, make_sessionmaker
from shared.queue import configure_celery, run_task, task_key
from shared.settings import Settings
from tests.services.reward.conftest import WEATHER_TRUTH, store_rollout
from tests.workers import Workers, wait_until

GOOD = ({"ground_truth": WEATHER_TRUTH}, [("get_weather", {"city": "Paris"})])
SOLUTION = ({"rollout_extra": {"solution": WEATHER_TRUTH}}, [("get_weather", {"city": "Rome"})])
NON_JSON = ({"ground_truth": "{not json"}, [("get_weather", {"city": "Paris"})])
EMPTY = ({"ground_truth": WEATHER_TRUTH}, None)
ROLLOUT = [GOOD, SOLUTION, NON_JSON, EMPTY, GOOD]


async def _reward_rows(session: Any, job_id: uuid.UUID, digest: str) -> int:
    stmt = (select(func.count()).select_from(RewardRow).join(TrajectoryRow, TrajectoryRow.id == RewardRow.trajectory_id)
            .where(TrajectoryRow.job_id == job_id, RewardRow.spec_hash == digest))
    return int(await session.scalar(stmt) or 0)


def _kwargs(job_id: uuid.UUID, digest: str, batch: int, size: int = 2) -> dict[str, Any]:
    return {"job_id": str(job_id), "spec_hash": digest, "batch": batch, "batch_size": size,
            "ground_truth_source": "auto"}


async def test_rescore_in_process_batches_and_reasons(session, sessionmaker, settings: Settings) -> None:
    job_id = await store_rollout(session, ROLLOUT)
    digest = await repository.save_spec(session, RewardSpec())
    await session.commit()
    outcomes = [await run_task(RESCORE_TASK, _kwargs(job_id, digest, b), settings=settings, sessionmaker=sessionmaker)
                for b in range(3)]
    assert [o["trajectories"] for o in outcomes] == [2, 2, 1]
    assert await run_task(RESCORE_TASK, _kwargs(job_id, digest, 0), settings=settings, sessionmaker=sessionmaker) is None
    counts = await repository.rescore_counts(session, job_id, digest, total=5)
    assert (counts.total, counts.scored, counts.failed, counts.pending) == (5, 3, 2, 0)
    rows = (await session.scalars(select(TrajectoryRow).where(TrajectoryRow.job_id == job_id))).all()
    totals = {r.sample_index: (await repository.read_scores(session, r.id, digest=digest))[-1] for r in rows}
    assert totals[1].score is not None and totals[1].score < 1.0  # ground truth from rollout_extra.solution
    assert "not valid JSON" in totals[2].error and totals[3].error == "empty trajectory: no messages"


async def test_same_batch_twice_records_each_score_once(session, sessionmaker, settings: Settings) -> None:
    job_id = await store_rollout(session, ROLLOUT)
    old = await repository.save_spec(session, RewardSpec())
    new = await repository.save_spec(session, RewardSpec(components=[ComponentSpec(name="opd_tool_call")]))
    await session.commit()
    async with task_rollout_client(settings, sessionmaker) as rollout:  # the job read through the rollout API
        await rescore_batch(session, rollout, job_id=job_id, digest=old, batch=0, batch_size=5, source="auto")
        first = await rescore_batch(session, rollout, job_id=job_id, digest=new, batch=0, batch_size=5, source="meta")
        again = await rescore_batch(session, rollout, job_id=job_id, digest=new, batch=0, batch_size=5, source="meta")
    assert first["rows_inserted"] > 0 and again["rows_inserted"] == 0
    assert first["failed"] == 3  # the solution-only row has no meta.ground_truth under source="meta"
    # Old scores stay: 3 scored rows + 5 totals; the new spec: 2 scored rows + 5 totals.
    assert (await _reward_rows(session, job_id, old), await _reward_rows(session, job_id, new)) == (8, 7)


# ---- a real Celery worker against Postgres and Redis --------------------------------------------------------

async def _setup(settings: Settings) -> tuple[uuid.UUID, str]:
    engine = create_engine_for(settings)
    async with make_sessionmaker(engine)() as session:
        job_id = await store_rollout(session, ROLLOUT)
        digest = await repository.save_spec(session, RewardSpec())
        await session.commit()
    await engine.dispose()
    return job_id, digest


async def _db(settings: Settings, fn: Any) -> Any:
    engine = create_engine_for(settings)
    try:
        async with make_sessionmaker(engine)() as session:
            result = await fn(session)
            await session.commit()
            return result
    finally:
        await engine.dispose()


def _succeeded(settings: Settings, keys: list[str]) -> bool:
    async def check(session: Any) -> bool:
        rows = [await session.get(TaskExecutionRow, k) for k in keys]
        return all(r is not None and r.status == "succeeded" for r in rows)
    return asyncio.run(_db(settings, check))


def test_rescore_on_celery_worker_records_each_score_once(settings: Settings, tmp_path: Path) -> None:
    workers = Workers(settings, tmp_path, prefix="reward")
    local, queue = workers.settings, workers.queue
    job_id, digest = asyncio.run(_setup(local))
    workers.start()
    try:
        celery = configure_celery(local)
        batches = [_kwargs(job_id, digest, b) for b in range(3)]
        for kwargs in [*batches, batches[0]]:  # batch 0 delivered twice
            celery.send_task(RESCORE_TASK, kwargs=kwargs, queue=queue)
        keys = [task_key(RESCORE_TASK, k) for k in batches]
        wait_until(lambda: _succeeded(local, keys), 60, "three batches to succeed")
        rows_before = asyncio.run(_db(local, lambda s: _reward_rows(s, job_id, digest)))
        # Forget that batch 0 ran, so the worker really runs it again: its writes must not duplicate.
        asyncio.run(_db(local, lambda s: s.execute(delete(TaskExecutionRow).where(TaskExecutionRow.key == keys[0]))))
        celery.send_task(RESCORE_TASK, kwargs=batches[0], queue=queue)
        wait_until(lambda: _succeeded(local, keys[:1]), 60, "batch 0 to run again")
        execution = asyncio.run(_db(local, lambda s: s.get(TaskExecutionRow, keys[0])))
        rows_after = asyncio.run(_db(local, lambda s: _reward_rows(s, job_id, digest)))
        counts = asyncio.run(_db(local, lambda s: repository.rescore_counts(s, job_id, digest, total=5)))
    finally:
        workers.stop_all()
        asyncio.run(_db(local, lambda s: s.execute(delete(RolloutJobRow).where(RolloutJobRow.id == job_id))))
    assert execution.result["rows_inserted"] == 0 and execution.result["trajectories"] == 2, workers.tail()
    assert rows_before == rows_after == 3 + 5  # a tool_call row per scored trajectory, a total row for each
    assert (counts.scored, counts.failed, counts.pending) == (3, 2, 0)
