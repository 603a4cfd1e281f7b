"""Reward storage on Postgres: specs by hash, provenance rows, each score once per spec."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from services.reward import repository
from services.reward.service import score_trajectory
from services.reward.spec import ComponentSpec, RewardSpec, spec_hash
from shared.db.models import RewardRow, TrajectoryRow
from shared.errors import NotFound
from shared.schema import Trajectory
from tests.services.reward.conftest import WEATHER_TRUTH, store_rollout

GOOD = ({"ground_truth": WEATHER_TRUTH}, [("get_weather", {"city": "Paris"})])
WRONG = ({"ground_truth": WEATHER_TRUTH}, [("get_weather", {"city": "Rome"})])


def test_spec_hash_is_stable_and_distinguishes_specs() -> None:
    a = RewardSpec.model_validate({"components": [{"name": "tool_call", "params": {"family": "auto", "mode": "graded"}}]})
    b = RewardSpec.model_validate({"components": [{"params": {"mode": "graded", "family": "auto"}, "weight": 1.0,
                                                   "name": "tool_call"}]})
    assert spec_hash(a) == spec_hash(b) and len(spec_hash(a)) == 64
    assert spec_hash(a) != spec_hash(RewardSpec(components=[ComponentSpec(name="tool_call", weight=0.5)]))


async def test_save_and_get_spec(session) -> None:
    spec = RewardSpec(components=[ComponentSpec(name="tool_call"), ComponentSpec(name="opd_tool_call", weight=0)])
    digest = await repository.save_spec(session, spec)
    assert await repository.save_spec(session, spec) == digest  # stored once, same hash
    assert await repository.get_spec(session, digest) == spec
    with pytest.raises(NotFound):
        await repository.get_spec(session, "0" * 64)


async def _rows(session, job_id, limit: int = 10) -> list[TrajectoryRow]:
    stmt = select(TrajectoryRow).where(TrajectoryRow.job_id == job_id).order_by(TrajectoryRow.sample_index).limit(limit)
    return list((await session.scalars(stmt)).all())


def _traj(row: TrajectoryRow) -> Trajectory:
    return Trajectory.model_validate({"id": str(row.id), "messages": row.messages, "tools": row.tools,
                                      "metadata": row.meta})


async def test_record_scores_once_per_spec_and_keeps_old_scores(session) -> None:
    job_id = await store_rollout(session, [GOOD, WRONG])
    rows = await _rows(session, job_id)
    assert [r.sample_index for r in rows] == [0, 1]
    old, new = RewardSpec(), RewardSpec(components=[ComponentSpec(name="tool_call"), ComponentSpec(name="opd_tool_call", weight=0)])
    for spec in (old, new):
        digest = await repository.save_spec(session, spec)
        results = [(r.id, score_trajectory(_traj(r), spec, WEATHER_TRUTH)) for r in rows]
        first = await repository.record_scores(session, digest, results, job_id=job_id)
        again = await repository.record_scores(session, digest, results, job_id=job_id)
        assert (first, again) == (len(rows) * (len(spec.components) + 1), 0)
    stored = await repository.read_scores(session, rows[0].id)
    assert sorted(r.component for r in stored) == ["opd_tool_call", "tool_call", "tool_call", "total", "total"]
    mine = await repository.read_scores(session, rows[0].id, digest=spec_hash(new))
    total = next(r for r in mine if r.component == repository.TOTAL_COMPONENT)
    assert total.score == pytest.approx(1.0) and total.status == "ok"
    tool = next(r for r in mine if r.component == "tool_call")
    assert tool.version and tool.params == {} and tool.metrics["argument_accuracy"] == 1.0
    # Only this job's rows: other tests share the run's database and may have committed scores.
    count = await session.scalar(select(func.count()).select_from(RewardRow)
                                 .where(RewardRow.trajectory_id.in_([r.id for r in rows])))
    assert count == 2 * (2 + 3)


async def test_rescore_counts(session) -> None:
    job_id = await store_rollout(session, [GOOD, ({}, [("get_weather", {"city": "Paris"})]), GOOD])
    spec = RewardSpec()
    digest = await repository.save_spec(session, spec)
    rows = await _rows(session, job_id, limit=2)
    results = [(r.id, score_trajectory(_traj(r), spec, r.meta.get("ground_truth"))) for r in rows]
    await repository.record_scores(session, digest, results, job_id=job_id)
    counts = await repository.rescore_counts(session, job_id, digest, total=3)
    assert (counts.total, counts.scored, counts.failed, counts.skipped, counts.pending) == (3, 1, 1, 0, 1)
    # Only rows that name the job count: the same scores kept without it are another job's progress.
    other = await store_rollout(session, [GOOD])
    await repository.record_scores(session, digest, [(r.id, score_trajectory(_traj(r), spec, WEATHER_TRUTH))
                                                     for r in await _rows(session, other)])
    assert (await repository.rescore_counts(session, job_id, digest, total=3)).scored == 1
