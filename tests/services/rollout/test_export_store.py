"""Reading a job's trajectories from Postgres in pages for export, and the export file itself.

The totals come from the reward service (its app in this process, through the same client a split
deployment uses over its URL): they are recorded with ``POST /v1/rewards/record`` as a shard does.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pyarrow.parquet as pq
import pytest

from services.rollout.export_store import export_job, iter_job_items, job_spec_hash
from shared.clients import Endpoints, RewardClient
from shared.db.models import RolloutJobRow, TrajectoryGroupRow, TrajectoryRow
from shared.db.session import engine_of
from shared.errors import NotFound
from shared.schema import ScoredTrajectory
from shared.schema.reward_spec import RewardSpec, spec_hash
from shared.settings import Settings

SPEC = {"components": [{"name": "tool_call", "weight": 1.0}]}
OTHER = {"components": [{"name": "tool_call", "weight": 0.5}]}


@pytest.fixture
async def rewards(settings: Settings, sessionmaker: Any, api_key: str) -> AsyncIterator[RewardClient]:
    async with Endpoints(settings, engine=engine_of(sessionmaker), sessionmaker=sessionmaker) as endpoints, \
            await RewardClient.open(endpoints, api_key=api_key) as client:
        yield client
MESSAGES = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def _traj(job: RolloutJobRow, group: TrajectoryGroupRow, index: int, **overrides: Any) -> TrajectoryRow:
    fields: dict[str, Any] = {
        "id": uuid.uuid4(), "job_id": job.id, "group_id": group.id, "task_id": group.task_id,
        "sample_index": index, "attempt": 0, "stop_reason": "stop", "turns": 1, "messages": MESSAGES,
        "prompt_ids": [1, 2], "response_ids": [7, 8, 9], "loss_mask": [1, 0, 1], "logprobs": [-0.1, None, -0.3],
        "meta": {"advantage": float(index) - 0.5},
    }
    return TrajectoryRow(**(fields | overrides))


async def _record(rewards: RewardClient, spec: dict[str, Any], job: RolloutJobRow,
                  scores: list[tuple[TrajectoryRow, float]]) -> None:
    results = [ScoredTrajectory(trajectory_id=str(row.id), score=score) for row, score in scores]
    await rewards.record(spec, results, job_id=str(job.id))


async def _store_job(session, rewards: RewardClient) -> tuple[RolloutJobRow, dict[str, TrajectoryRow]]:
    job = RolloutJobRow(spec={"reward": SPEC, "group_size": 2}, total_groups=2)
    session.add(job)
    await session.flush()
    groups = [TrajectoryGroupRow(job_id=job.id, task_id=t) for t in ("task-a", "task-b")]
    session.add_all(groups)
    await session.flush()
    rows = {
        "a0": _traj(job, groups[0], 0),
        "a1-old": _traj(job, groups[0], 1, stop_reason="api_error", meta={"error": "upstream down"}),
        "a1": _traj(job, groups[0], 1, attempt=1),
        "b0": _traj(job, groups[1], 0, loss_mask=[1, 1]),  # misaligned: tokens dropped, row kept
        "b1": _traj(job, groups[1], 1, meta={"advantage": 0.5, "reward": 0.9}),
        "b2-cut": _traj(job, groups[1], 2, meta={"cut": "slowest member beyond group_size"}),
    }
    session.add_all(rows.values())
    await session.flush()
    await session.commit()  # the reward service records only trajectories that are stored
    await _record(rewards, OTHER, job, [(rows["b1"], 0.2)])
    await _record(rewards, SPEC, job, [(rows["a0"], 1.0), (rows["a1"], 0.0), (rows["b1"], 0.7)])
    return job, rows


async def test_pages_keep_the_newest_attempt_skip_cut_members_and_pick_the_jobs_reward(session, rewards) -> None:
    job, rows = await _store_job(session, rewards)
    pages = [page async for page in iter_job_items(session, rewards, job.id, page_size=2)]
    items = [item for page in pages for item in page]
    assert len(pages) == 3
    assert [item.trajectory.id for item in items] == [str(rows[k].id) for k in ("a0", "a1", "b0", "b1")]
    by_id = {item.trajectory.id: item for item in items}
    assert by_id[str(rows["a1"].id)].reward == 0.0 and by_id[str(rows["a1"].id)].advantage == 0.5
    assert by_id[str(rows["b1"].id)].reward == 0.7  # the job's own spec, not the other one nor meta
    assert by_id[str(rows["b0"].id)].reward is None
    kept_b0 = by_id[str(rows["b0"].id)].trajectory
    assert kept_b0.tokens is None and "token data dropped" in kept_b0.metadata["export_error"]
    a0 = by_id[str(rows["a0"].id)].trajectory
    assert a0.tokens is not None and a0.tokens.logprobs == [-0.1, None, -0.3]
    assert items[0].task_id == "task-a" and a0.group_id == str(rows["a0"].group_id)


async def test_without_the_jobs_spec_the_reward_comes_from_meta_then_any_stored_total(session, rewards) -> None:
    job = RolloutJobRow(spec={"group_size": 2}, total_groups=1)  # an env-only job: no reward spec
    session.add(job)
    await session.flush()
    group = TrajectoryGroupRow(job_id=job.id, task_id="env-task")
    session.add(group)
    await session.flush()
    env_scored = _traj(job, group, 0, meta={"reward": 1.0, "advantage": 1.0})
    rescored = _traj(job, group, 1, meta={})
    session.add_all([env_scored, rescored])
    await session.flush()
    await session.commit()
    await _record(rewards, OTHER, job, [(rescored, 0.25)])  # a later rescore with another spec
    items = [item async for page in iter_job_items(session, rewards, job.id) for item in page]
    assert [(item.reward, item.advantage) for item in items] == [(1.0, 1.0), (0.25, None)]


async def test_export_job_writes_parquet_and_jsonl_files(session, rewards, tmp_path) -> None:
    job, rows = await _store_job(session, rewards)
    path = await export_job(session, rewards, job.id, fmt="parquet", directory=tmp_path, page_size=3)
    table = pq.read_table(path).to_pylist()
    assert [r["id"] for r in table] == [str(rows[k].id) for k in ("a0", "a1", "b0", "b1")]
    assert table[0]["advantages"] == [-0.5, 0.0, -0.5] and table[0]["response_mask"] == [1, 0, 1]
    jsonl = await export_job(session, rewards, job.id, fmt="jsonl", directory=tmp_path)
    assert len(jsonl.read_bytes().splitlines()) == 4


async def test_unknown_job_is_not_found_and_leaves_no_file(session, rewards, tmp_path) -> None:
    with pytest.raises(NotFound):
        await export_job(session, rewards, uuid.uuid4(), fmt="parquet", directory=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_job_spec_hash_is_none_without_a_readable_spec() -> None:
    assert job_spec_hash(RolloutJobRow(spec={})) is None
    assert job_spec_hash(RolloutJobRow(spec={"reward": {"components": "nope"}})) is None
    assert job_spec_hash(RolloutJobRow(spec={"reward": SPEC})) == spec_hash(RewardSpec.model_validate(SPEC))
