"""Cleaning jobs for real: in-process tasks and a Celery worker subprocess, Postgres and Redis.

These tests commit (tasks run in their own sessions, as in production), so
they use their own engine on the run's test database instead of the
rolled-back test transaction.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.cleaning import datasets, jobs, tasks  # noqa: F401  (registers the queue tasks)
from services.cleaning.app import SERVICE
from services.cleaning.schemas import CleanJobCreate
from shared.auth import create_key
from shared.db.migrate import upgrade
from shared.db.models import CleanedRowRow, CleaningJobRow, DedupSignatureRow, TaskExecutionRow
from shared.db.session import create_engine_for, make_sessionmaker, session_scope
from shared.queue import CeleryDispatcher, InProcessDispatcher, run_task
from shared.settings import Settings
from shared.web import create_app
from tests.conftest import shared_data_dir
from tests.workers import Workers


def _body() -> bytes:
    """Real rows, some repeated (duplicates across batches) and some unreadable lines."""
    lines = (shared_data_dir() / "glaive_toolcall_en_llamafactory.jsonl").read_bytes().splitlines()[:60]
    lines += (shared_data_dir() / "zh_mt_bench_gpt4.jsonl").read_bytes().splitlines()[:20]
    lines += lines[:15] + [b"{broken", b"[1, 2]", b'{"id": "no-messages"}']
    return b"\n".join(lines) + b"\n"


@pytest.fixture
async def maker(settings: Settings) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = create_engine_for(settings)
    yield make_sessionmaker(engine)
    await engine.dispose()


async def _dataset(maker: async_sessionmaker[AsyncSession], body: bytes) -> uuid.UUID:
    async with session_scope(maker) as session:
        dataset, _ = await datasets.store_dataset(session, name=f"job-{uuid.uuid4().hex[:6]}", source=body,
                                                  max_line_bytes=1 << 20)
    return dataset.id


async def _wait_done(maker: async_sessionmaker[AsyncSession], job_id: uuid.UUID, timeout_s: float) -> CleaningJobRow:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        async with maker() as session:
            job = await session.get(CleaningJobRow, job_id)
        if job is not None and job.status in ("succeeded", "failed"):
            return job
        await asyncio.sleep(0.2)
    raise AssertionError("the cleaning job did not finish in time")


async def _dedup_executions(maker: async_sessionmaker[AsyncSession], job_id: uuid.UUID) -> list[TaskExecutionRow]:
    async with maker() as session:
        stmt = select(TaskExecutionRow).where(TaskExecutionRow.task_name == "cleaning.dedup_phase",
                                              TaskExecutionRow.key.contains(str(job_id)))
        return list((await session.execute(stmt)).scalars())


async def _outcomes(maker: async_sessionmaker[AsyncSession], job_id: uuid.UUID) -> dict[str, int]:
    async with maker() as session:
        stmt = (select(CleanedRowRow.outcome, func.count()).where(CleanedRowRow.job_id == job_id)
                .group_by(CleanedRowRow.outcome))
        return {k: int(v) for k, v in (await session.execute(stmt)).tuples()}


async def _check_finished(maker: async_sessionmaker[AsyncSession], job: CleaningJobRow, total: int) -> None:
    assert job.status == "succeeded", job.error
    assert job.total == job.done == total
    assert job.kept + job.dropped + job.invalid == total
    assert job.invalid == 3
    assert await _outcomes(maker, job.id) == {"kept": job.kept, "dropped": job.dropped, "invalid": job.invalid}
    executions = await _dedup_executions(maker, job.id)
    assert len(executions) == 1 and executions[0].attempts == 1 and executions[0].status == "succeeded"
    steps = {s["step"]: s for s in job.stats["steps"]}
    assert steps["DedupFilter"]["dropped"]["duplicate"] >= 15
    assert steps["MessageNormalizer"]["rows_in"] == total - 3
    async with maker() as session:
        left = await session.scalar(select(func.count()).select_from(DedupSignatureRow)
                                    .where(DedupSignatureRow.job_id == job.id))
    assert left == 0


async def test_in_process_job_completes_and_reruns_write_nothing_twice(
    settings: Settings, maker: async_sessionmaker[AsyncSession]
) -> None:
    body = _body()
    total = body.count(b"\n")
    dataset_id = await _dataset(maker, body)
    dispatcher = InProcessDispatcher(settings, maker)
    async with session_scope(maker) as session:
        job_row = await jobs.create_job(session, dispatcher,
                                        CleanJobCreate(dataset_id=dataset_id, batch_size=25))
    job = await _wait_done(maker, job_row.id, 30)
    await _check_finished(maker, job, total)
    assert job.options["batches"] == 4 and job.options["batches_done"] == 4
    # The ledger skips a finished task; the body itself, run again, inserts nothing and counts nothing.
    kwargs = {"job_id": str(job.id), "batch_index": 1}
    assert await run_task("cleaning.run_batch", kwargs, settings=settings, sessionmaker=maker) is None
    async with session_scope(maker) as session:
        again = await jobs.run_batch(session, dispatcher, settings, job.id, 1)
    assert again == {"inserted": 0}
    async with session_scope(maker) as session:
        assert await jobs.dedup_phase(session, job.id) == {"skipped": True}
    after = await _wait_done(maker, job.id, 5)
    assert (after.kept, after.dropped, after.invalid, after.done) == (job.kept, job.dropped, job.invalid, job.done)
    assert len(await _dedup_executions(maker, job.id)) == 1


async def _api_client(settings: Settings, maker: async_sessionmaker[AsyncSession]) -> tuple[Any, httpx.AsyncClient]:
    async with session_scope(maker) as session:
        _, key = await create_key(session, "jobs-test", salt=settings.key_salt)
    # A small row limit stands in for a 50 MB row: the same per-row error, without the memory.
    app = create_app(SERVICE, settings=settings.model_copy(update={"max_row_bytes": 64 * 1024}))
    ctx = app.router.lifespan_context(app)
    await ctx.__aenter__()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test",
                               headers={"authorization": f"Bearer {key}"})
    return ctx, client


async def test_job_through_the_api_streams_kept_and_dropped(
    settings: Settings, maker: async_sessionmaker[AsyncSession]
) -> None:
    ctx, client = await _api_client(settings, maker)
    try:
        body = _body() + b'{"id": "huge", "pad": "' + b"x" * (100 * 1024) + b'"}\n'
        ds = (await client.post("/v1/datasets", params={"name": "api-job"}, content=body)).json()
        assert ds["invalid_count"] == 3 and "byte limit" in ds["invalid_lines"][-1]["error"]
        created = await client.post("/v1/clean/jobs", json={"dataset_id": ds["id"], "batch_size": 40})
        assert created.status_code == 202, created.text
        job_id = created.json()["id"]
        for _ in range(300):
            job = (await client.get(f"/v1/clean/jobs/{job_id}")).json()
            if job["status"] == "succeeded":
                break
            await asyncio.sleep(0.1)
        assert job["status"] == "succeeded" and job["kept"] + job["dropped"] + job["invalid"] == ds["row_count"]
        kept = (await client.get(f"/v1/clean/jobs/{job_id}/kept")).content.splitlines()
        dropped = (await client.get(f"/v1/clean/jobs/{job_id}/dropped")).content.splitlines()
        assert len(kept) == job["kept"] and len(dropped) == job["dropped"] + job["invalid"]
        assert all("messages" in orjson.loads(k) and "_tf_row_index" not in orjson.loads(k) for k in kept)
        dups = (await client.get(f"/v1/clean/jobs/{job_id}/dropped", params={"reason": "duplicate"})).content
        assert dups and all(orjson.loads(d)["drop_step"] == "DedupFilter" for d in dups.splitlines())
        # Every dropped line says what fired; duplicates name their signature.
        assert all(orjson.loads(d)["drop_evidence"]["check"] for d in dropped)
        assert all(len(orjson.loads(d)["drop_evidence"]["signature"]) == 32 for d in dups.splitlines())
        summary = (await client.get(f"/v1/clean/jobs/{job_id}/dropped/summary")).json()
        assert sum(i["count"] for i in summary["items"]) == job["dropped"] + job["invalid"]
        assert {"step": "input", "reason": "invalid_row", "count": 4} in summary["items"]
        invalid = (await client.get(f"/v1/clean/jobs/{job_id}/dropped", params={"reason": "invalid_row"})).content
        details = [orjson.loads(x)["drop_detail"] for x in invalid.splitlines()]
        assert len(details) == 4 and any("byte limit" in d for d in details) and any("no messages" in d for d in details)
        missing = await client.get(f"/v1/clean/jobs/{uuid.uuid4()}/kept")
        assert missing.status_code == 404
        bad = await client.post("/v1/clean/jobs", json={"dataset_id": ds["id"], "pipeline": [{"name": "Nope"}]})
        assert bad.status_code == 400
        unknown = await client.post("/v1/clean/jobs", json={"dataset_id": str(uuid.uuid4())})
        assert unknown.status_code == 404
    finally:
        await client.aclose()
        await ctx.__aexit__(None, None, None)


def test_celery_worker_runs_a_job(settings: Settings, tmp_path: Path) -> None:
    workers = Workers(settings, tmp_path, prefix="clean")
    workers.start()
    try:
        asyncio.run(_celery_job(workers.settings, workers.log))
    finally:
        workers.stop_all()


async def _celery_job(settings: Settings, log: Path) -> None:
    engine = create_engine_for(settings)
    maker = make_sessionmaker(engine)
    try:
        body = _body()
        dataset_id = await _dataset(maker, body)
        async with session_scope(maker) as session:
            job_row = await jobs.create_job(session, CeleryDispatcher(settings),
                                            CleanJobCreate(dataset_id=dataset_id, batch_size=30))
        try:
            job = await _wait_done(maker, job_row.id, 90)
        except AssertionError:
            raise AssertionError(log.read_text()[-3000:]) from None
        await _check_finished(maker, job, body.count(b"\n"))
    finally:
        await engine.dispose()


async def test_job_with_pii_in_worker_processes(settings: Settings, maker: async_sessionmaker[AsyncSession]) -> None:
    rows = [{"id": i, "messages": [{"role": "user", "content": f"write to user{i}@corp.io about the plan"},
                                   {"role": "assistant", "content": "Sure, I will send the plan today."}]}
            for i in range(12)]
    dataset_id = await _dataset(maker, b"".join(orjson.dumps(r) + b"\n" for r in rows))
    local = settings.model_copy(update={"pii_processes": 2})
    pipeline = [{"name": "MessageNormalizer"}, {"name": "PIIPresidioFilter"}]
    async with session_scope(maker) as session:
        job_row = await jobs.create_job(session, InProcessDispatcher(local, maker), CleanJobCreate(
            dataset_id=dataset_id, pipeline=pipeline, dedup=False, batch_size=5))
    job = await _wait_done(maker, job_row.id, 60)
    assert job.status == "succeeded" and job.kept == 12
    pii = next(s for s in job.stats["steps"] if s["step"] == "PIIPresidioFilter")
    assert pii["rows_in"] == pii["rows_out"] == 12 and pii["seconds"] > 0
    async with maker() as session:
        stored = (await session.execute(select(CleanedRowRow.data).where(CleanedRowRow.job_id == job.id))).scalars()
        assert all("@corp.io" not in d["messages"][0]["content"] for d in stored)


async def test_job_on_the_embedded_sqlite_default(settings: Settings, tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'tf.db'}"
    await asyncio.to_thread(upgrade, url)
    local = settings.model_copy(update={"database_url": url})
    engine = create_engine_for(local)
    maker = make_sessionmaker(engine)
    try:
        body = _body()
        dataset_id = await _dataset(maker, body)
        async with session_scope(maker) as session:
            job_row = await jobs.create_job(session, InProcessDispatcher(local, maker),
                                            CleanJobCreate(dataset_id=dataset_id, batch_size=10))
        job = await _wait_done(maker, job_row.id, 60)
        await _check_finished(maker, job, body.count(b"\n"))
    finally:
        await engine.dispose()
