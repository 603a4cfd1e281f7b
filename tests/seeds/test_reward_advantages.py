"""Agent Harness seed (003): per-step GRPO, A_{i,t} = (r_{i,t} − μ_t) / (σ_t + 1e-8), and the generation mask.

Per-step rewards come from env steps (``StepRecord.reward``), go through
``grpo_per_step`` in the rollout shard's scoring and land on each turn's
sampled tokens in the Parquet export (mask 0 tokens get 0). One group function
(``shared.advantages``) serves the rollout shard and ``POST /v1/advantages``.
A ``None`` reward is masked, never dropped: every member keeps its entries.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from services.reward.advantages import grpo_per_step
from services.reward.app import SERVICE
from services.rollout import service as rollout_service
from services.rollout.export import ExportItem, parquet_row
from services.rollout.scoring import score_group
from shared.advantages import generation_mask, group_advantages, step_advantages
from shared.db.models import TrajectoryRow
from shared.schema import StepRecord, TokenData, Trajectory
from shared.settings import Settings
from tests.services.rollout.test_service import Live, job_body


def _seed_formula(rows: list[list[float]]) -> list[list[float]]:
    out = []
    for row in rows:
        adv = []
        for t, r in enumerate(row):
            column = [m[t] for m in rows if len(m) > t]
            mu = sum(column) / len(column)
            sigma = math.sqrt(sum((x - mu) ** 2 for x in column) / len(column))
            adv.append((r - mu) / (sigma + 1e-8) if sigma > 1e-12 else 0.0)
        out.append(adv)
    return out


def test_per_step_grpo_is_the_seed_formula() -> None:
    rewards = [[1.0, 0.0, 0.5], [0.0, 0.0, 1.0], [0.5, 1.0, 0.0], [1.0, 1.0, 1.0]]
    adv, masks = grpo_per_step(rewards)
    expected = _seed_formula(rewards)
    for got, want in zip(adv, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-9)
    assert masks == [[1, 1, 1]] * 4


def test_generation_mask_marks_only_thought_and_action_tokens() -> None:
    mask = generation_mask([("sampled", 7), ("sampled", 8), ("observation", 8), ("sampled", 5)])
    assert mask == [1] * 15 + [0] * 8 + [1] * 5


def test_none_reward_is_masked_not_dropped() -> None:
    out = step_advantages([[1.0, None], [0.0, 1.0], [None, 0.0]])
    assert [len(a) for a in out.advantages] == [2, 2, 2] and out.mask == [[1, 0], [1, 1], [0, 1]]
    assert out.advantages[0][1] == 0.0 and out.error == "2 missing or non-finite step rewards masked"
    flat = group_advantages([1.0, None, 0.0, float("nan")])
    assert len(flat.advantages) == 4 and flat.mask == [1, 0, 1, 0]
    assert flat.advantages == pytest.approx([1.0, 0.0, -1.0, 0.0], abs=1e-6)


@pytest.fixture
async def client(make_client: Any) -> httpx.AsyncClient:
    return await make_client(SERVICE)  # type: ignore[no-any-return]


def _member(i: int, reward: float | None, step_rewards: list[float | None]) -> Trajectory:
    traj = Trajectory(id=f"m{i}", messages=[{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
                      steps=[StepRecord(turn=t + 1, reward=r, completion_tokens=2) for t, r in enumerate(step_rewards)])
    traj.metadata["env_reward"] = reward
    return traj


async def test_rollout_shard_scoring_and_rest_give_the_same_numbers(client: httpx.AsyncClient) -> None:
    rewards: list[float | None] = [1.0, None, 0.25, 0.0]
    steps: list[list[float | None]] = [[0.5, 0.5], [], [0.25, 0.0], [0.0, 0.0]]
    trajs = [_member(i, r, s) for i, (r, s) in enumerate(zip(rewards, steps, strict=True))]
    scores = score_group(trajs, estimator="grpo_per_step")  # what ShardRun calls per group
    resp = await client.post("/v1/advantages", json={"groups": [{"rewards": rewards}]})
    rest = resp.json()["groups"][0]
    assert resp.status_code == 200 and [m[0] for m in rest["masks"]] == [1, 0, 1, 1]
    assert scores.advantages == [rest["advantages"][0][0], None, rest["advantages"][2][0], rest["advantages"][3][0]]
    per_step = [[t.metadata["step_advantages"] for t in trajs], [t.metadata["step_advantage_mask"] for t in trajs]]
    want = [[s.reward or 0.0 for s in t.steps] if t.metadata["env_reward"] is not None else [None] * len(t.steps)
            for t in trajs]
    resp = await client.post("/v1/advantages", json={"estimator": "grpo_per_step", "groups": [{"step_rewards": want}]})
    body = resp.json()["groups"][0]
    assert per_step == [body["advantages"], body["masks"]]
    resp = await client.post("/v1/advantages", json={"estimator": "grpo_per_step", "groups": [{"rewards": rewards}]})
    body = resp.json()["groups"][0]
    assert len(body["advantages"]) == len(rewards) and body["masks"] == [[1], [0], [1], [1]]
    assert body["error"] == "1 missing or non-finite step rewards masked"


def test_export_spreads_each_turns_advantage_on_its_sampled_tokens() -> None:
    traj = Trajectory(messages=[{"role": "user", "content": "q"}],
                      steps=[StepRecord(turn=1, completion_tokens=3), StepRecord(turn=2, completion_tokens=2)],
                      tokens=TokenData(prompt_ids=[1, 2], response_ids=[10, 11, 12, 90, 91, 13, 14],
                                       loss_mask=[1, 1, 1, 0, 0, 1, 1]))
    traj.metadata.update(step_advantages=[0.75, -1.5], step_advantage_mask=[1, 1])
    row = parquet_row(ExportItem(traj, advantage=0.1))
    assert row["advantages"] == [0.75, 0.75, 0.75, 0.0, 0.0, -1.5, -1.5]
    traj.metadata["step_advantage_mask"] = [0, 1]
    assert parquet_row(ExportItem(traj, advantage=0.1))["advantages"] == [0.0] * 5 + [-1.5, -1.5]
    traj.metadata.pop("step_advantages")
    assert parquet_row(ExportItem(traj, advantage=0.1))["advantages"] == [0.1, 0.1, 0.1, 0.0, 0.0, 0.1, 0.1]


@pytest.fixture
async def live(settings: Settings) -> AsyncIterator[Live]:
    runner = Live(settings.model_copy(update={"rollout_poll_s": 0.05}))
    yield runner
    await runner.dispatcher.drain()
    await runner.engine.dispose()


async def test_env_step_rewards_reach_per_step_advantages_in_a_real_job(live: Live) -> None:
    """A job over the tool-routing env (SCRIPTED policy): each turn's env reward is stored per step.

    No reward spec: the env's rewards alone drive the advantages (and no score rows outlive the test).
    """
    job_id = await live.create(job_body("What is the status of item A1?", advantage_estimator="grpo_per_step",
                                        reward=None))
    await live.dispatcher.drain()
    async with live.maker() as session:
        job = await rollout_service.read_job(session, job_id)
        rows = list(await session.scalars(select(TrajectoryRow).where(TrajectoryRow.job_id == job_id)))
    assert job.status == "succeeded" and len(rows) == 2
    for row in rows:
        assert [s["reward"] for s in row.steps] == [0.0, 1.0]  # query_status, then the graded respond
        assert len(row.meta["step_advantages"]) == 2 and row.meta["step_advantage_mask"] == [1, 1]
        assert row.meta["step_advantages"] == [0.0, 0.0]  # identical scripted members: no signal
