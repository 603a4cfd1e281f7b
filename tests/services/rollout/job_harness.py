"""The rollout app in this process on the run's Postgres: submit jobs over its HTTP API, read their traces.

Shards run on the app's in-process dispatcher; every service they call (the gateway included) is
reached through the service clients, here their apps started for the shard on the same database.
Everything a job wrote (groups, trajectories, traces, task records, keys) is deleted afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncEngine

from services.rollout.app import SERVICE as ROLLOUT
from shared.auth import create_key
from shared.db.models import ApiKeyRow, GatewayTraceRow, RolloutJobRow, TaskExecutionRow
from shared.db.session import make_sessionmaker
from shared.settings import Settings
from shared.web import create_app, get_app_state

__all__ = ["JobHarness", "rollout_app"]


class JobHarness:
    """An HTTP client of the rollout app, plus what a test needs to check a job."""

    def __init__(self, app: Any, client: httpx.AsyncClient, engine: AsyncEngine) -> None:
        self.app, self.client, self.engine = app, client, engine
        self.jobs: list[str] = []

    async def run(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Submit a job, wait until the dispatcher is idle, return the job and its trajectories."""
        resp = await self.client.post("/v1/rollouts", json=body)
        assert resp.status_code == 202, resp.text
        job_id = resp.json()["id"]
        self.jobs.append(job_id)
        await get_app_state(self.app).dispatcher.drain()  # type: ignore[attr-defined]
        job = (await self.client.get(f"/v1/rollouts/{job_id}")).json()
        items = (await self.client.get(f"/v1/rollouts/{job_id}/trajectories", params={"limit": 500})).json()["items"]
        return job, items

    async def trace_rows(self, session_id: str, *, at_least: int = 0, timeout_s: float = 10.0) -> list[GatewayTraceRow]:
        """The gateway's rows of one session, in the database's order.

        A gateway in its own server writes a trace in its sink's next batch, after the call was answered,
        so a test that reads right after a job waits (up to ``timeout_s``) until ``at_least`` rows are there.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            async with make_sessionmaker(self.engine)() as db:
                stmt = select(GatewayTraceRow).where(GatewayTraceRow.session_id == session_id).order_by(
                    GatewayTraceRow.attempt, GatewayTraceRow.created_at, GatewayTraceRow.log_id)
                rows = list((await db.execute(stmt)).scalars().all())
            if len(rows) >= at_least or time.monotonic() >= deadline:
                return rows
            await asyncio.sleep(0.05)

    async def cleanup(self, key_id: uuid.UUID) -> None:
        """Delete the jobs (groups, trajectories cascade), their traces, task records and keys."""
        async with make_sessionmaker(self.engine)() as db:
            for job_id in self.jobs:
                await db.execute(delete(GatewayTraceRow).where(GatewayTraceRow.session_id.like(f"rollout-{job_id}-%")))
                await db.execute(delete(RolloutJobRow).where(RolloutJobRow.id == uuid.UUID(job_id)))
                await db.execute(delete(ApiKeyRow).where(ApiKeyRow.name.like(f"rollout-shard-{job_id}%")))
                await db.execute(delete(TaskExecutionRow).where(TaskExecutionRow.key.contains(job_id)))
            await db.execute(delete(ApiKeyRow).where(ApiKeyRow.id == key_id))
            await db.commit()


@contextlib.asynccontextmanager
async def rollout_app(settings: Settings, engine: AsyncEngine, **overrides: Any) -> AsyncIterator[JobHarness]:
    """The rollout app with settings ``overrides``, behind a client holding a fresh user key."""
    app = create_app(ROLLOUT, engine=engine, settings=settings.model_copy(update=overrides))
    async with make_sessionmaker(engine)() as db:
        row, key = await create_key(db, "rollout-job-harness", salt=settings.key_salt)
        await db.commit()
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test",
                             headers={"authorization": f"Bearer {key}"}, timeout=300)
    async with app.router.lifespan_context(app), http as client:
        harness = JobHarness(app, client, engine)
        try:
            yield harness
        finally:
            await harness.cleanup(row.id)
