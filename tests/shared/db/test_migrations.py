"""Alembic migrations go up, down and up again on Postgres and SQLite, and match the models."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.ext.asyncio import create_async_engine

from shared.db.base import Base
from shared.db.migrate import downgrade, head_revision, upgrade
from tests.conftest import create_database, drop_database

TABLES = {"api_key", "task_execution", "dataset", "dataset_row", "cleaning_job", "cleaned_row", "dedup_signature",
          "rollout_job", "trajectory_group", "trajectory", "gateway_trace", "reward", "reward_spec", "opd_job"}

# Unique per run: two runs on one server must not drop each other's database.
_MIGRATIONS_DB = f"trajforge_test_migrations_{uuid.uuid4().hex[:8]}"


async def _tables_and_diff(url: str) -> tuple[set[str], list[object]]:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            tables = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
            diff = await conn.run_sync(lambda c: compare_metadata(MigrationContext.configure(c), Base.metadata))
        return tables, diff
    finally:
        await engine.dispose()


def _round_trip(url: str) -> None:
    upgrade(url)
    tables, diff = asyncio.run(_tables_and_diff(url))
    assert tables >= TABLES
    assert diff == [], f"models and migrations disagree: {diff}"
    downgrade(url, "base")
    tables, _ = asyncio.run(_tables_and_diff(url))
    assert tables <= {"alembic_version"}
    upgrade(url)
    assert asyncio.run(_tables_and_diff(url))[0] >= TABLES


def test_up_down_up_on_postgres() -> None:
    url = asyncio.run(create_database(_MIGRATIONS_DB))
    try:
        _round_trip(url)
    finally:
        asyncio.run(drop_database(_MIGRATIONS_DB))


def test_up_down_up_on_sqlite(tmp_path) -> None:  # type: ignore[no-untyped-def]
    _round_trip(f"sqlite+aiosqlite:///{tmp_path / 'tf.db'}")


def test_there_is_one_head() -> None:
    assert head_revision() is not None


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_table_is_mapped(table: str) -> None:
    assert table in Base.metadata.tables


async def _insert_key_and_read_scopes(url: str, *, after: bool) -> list[tuple[str, str]]:
    from sqlalchemy import text

    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            name = "after" if after else "before"
            await conn.execute(text("INSERT INTO api_key (id, name, prefix, key_hash, created_at) "
                                    "VALUES (:id, :name, 'tf_x', :hash, CURRENT_TIMESTAMP)"),
                               {"id": uuid.uuid4().hex, "name": name, "hash": uuid.uuid4().hex})
            if not after:
                return []
            rows = await conn.execute(text("SELECT name, scope FROM api_key ORDER BY name"))
            return [(str(r[0]), str(r[1])) for r in rows]
    finally:
        await engine.dispose()


def test_keys_from_before_scopes_become_admin_and_new_ones_default_to_user(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Upgrading must not lock an operator out of the routes that became admin-only."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'tf.db'}"
    upgrade(url, "0005")
    asyncio.run(_insert_key_and_read_scopes(url, after=False))
    upgrade(url)
    assert asyncio.run(_insert_key_and_read_scopes(url, after=True)) == [("after", "user"), ("before", "admin")]


async def _scored_before_0011(url: str) -> dict[str, str]:
    """Trajectories as 0010 left them: one rescored (two totals), one failed (a null total), one never scored."""
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import DateTime, bindparam, text

    ids = {name: uuid.uuid4().hex for name in ("rescored", "failed", "unscored")}
    insert_traj = text("INSERT INTO trajectory (id, sample_index, attempt, status, truncated, turns, messages, tools, "
                       "steps, meta, created_at) VALUES (:id, 0, 0, 'finished', false, 1, '[]', '[]', '[]', '{}', "
                       "CURRENT_TIMESTAMP)")
    insert_reward = text("INSERT INTO reward (id, trajectory_id, component, version, params, spec_hash, weight, "
                         "score, metrics, status, created_at) VALUES (:id, :tid, :component, '1', '{}', :digest, 1.0, "
                         ":score, '{}', 'ok', :at)").bindparams(bindparam("at", type_=DateTime(timezone=True)))
    start = datetime(2026, 1, 1, tzinfo=UTC)
    scores = [("rescored", "total", "a" * 64, 0.25, 0), ("rescored", "tool_call", "b" * 64, 0.9, 1),
              ("rescored", "total", "b" * 64, 0.75, 2), ("rescored", "total", "c" * 64, 0.1, -1),
              ("failed", "total", "a" * 64, None, 0)]
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            for tid in ids.values():
                await conn.execute(insert_traj, {"id": tid})
            for name, component, digest, score, minutes in scores:
                await conn.execute(insert_reward, {"id": uuid.uuid4().hex, "tid": ids[name], "component": component,
                                                   "digest": digest, "score": score,
                                                   "at": start + timedelta(minutes=minutes)})
    finally:
        await engine.dispose()
    return ids


async def _kept_rewards(url: str) -> list[tuple[str, float | None]]:
    from sqlalchemy import text

    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(text("SELECT id, reward FROM trajectory"))
            return [(uuid.UUID(str(r[0])).hex, r[1]) for r in rows]
    finally:
        await engine.dispose()


def _backfill(url: str) -> None:
    upgrade(url, "0010")
    ids = asyncio.run(_scored_before_0011(url))
    upgrade(url)
    kept = dict(asyncio.run(_kept_rewards(url)))
    # The newest total of any spec, as the rollout's listings read it from the reward table before.
    assert kept == {ids["rescored"]: 0.75, ids["failed"]: None, ids["unscored"]: None}
    downgrade(url, "0010")
    assert "reward" not in {c["name"] for c in asyncio.run(_columns(url, "trajectory"))}


async def _columns(url: str, table: str) -> list[Any]:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(lambda c: list(inspect(c).get_columns(table)))
    finally:
        await engine.dispose()


def test_0011_backfills_each_trajectorys_newest_total_on_sqlite(tmp_path) -> None:  # type: ignore[no-untyped-def]
    _backfill(f"sqlite+aiosqlite:///{tmp_path / 'tf.db'}")


def test_0011_backfills_each_trajectorys_newest_total_on_postgres() -> None:
    name = f"{_MIGRATIONS_DB}_0011"
    url = asyncio.run(create_database(name))
    try:
        _backfill(url)
    finally:
        asyncio.run(drop_database(name))
