"""The reward router inside the reward service app (ASGI transport, real lifespan and database)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from services.reward.app import SERVICE
from shared.schema.reward_spec import RewardSpec, spec_hash


@pytest.fixture
async def client(make_client) -> httpx.AsyncClient:
    return await make_client(SERVICE)


async def test_score_endpoint(client: httpx.AsyncClient, make_traj) -> None:
    traj = make_traj(calls=[("get_weather", {"city": "Paris"})]).model_dump(mode="json")
    truth = {"decision": "tool_call", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
    body = {"trajectories": [traj, traj], "ground_truths": [truth, None],
            "spec": {"components": [{"name": "tool_call", "weight": 1.0}]}}
    resp = await client.post("/v1/rewards/score", json=body)
    assert resp.status_code == 200
    results = resp.json()["results"]
    assert results[0]["score"] == pytest.approx(1.0)
    assert results[0]["records"][0]["component"] == "tool_call"
    assert results[1]["status"] == "failed"


async def test_advantages_endpoint(client: httpx.AsyncClient) -> None:
    body = {"groups": [{"rewards": [1.0, 0.0, None]}, {"step_rewards": [[1.0, 0.0], [0.0]]}], "estimator": "grpo"}
    resp = await client.post("/v1/advantages", json=body)
    assert resp.status_code == 200
    first = resp.json()["groups"][0]
    assert first["advantages"][0][0] == pytest.approx(1.0, abs=1e-6)
    assert first["masks"] == [[1], [1], [0]] and "masked" in first["error"]
    per_step = await client.post("/v1/advantages", json={**body, "estimator": "grpo_per_step"})
    assert per_step.json()["groups"][1]["masks"] == [[1, 0], [1]]


async def test_check_endpoint_gives_the_hash_or_names_the_bad_component(client: httpx.AsyncClient) -> None:
    spec = {"components": [{"name": "tool_call", "params": {"mode": "bfcl"}}]}
    resp = await client.post("/v1/rewards/check", json={"spec": spec})
    assert resp.status_code == 200 and resp.json() == {"spec_hash": spec_hash(RewardSpec.model_validate(spec))}
    unknown = await client.post("/v1/rewards/check", json={"spec": {"components": [{"name": "vibes"}]}})
    assert unknown.status_code == 400 and unknown.json()["code"] == "unknown_reward_component"
    assert "vibes" in unknown.text
    bad = await client.post("/v1/rewards/check",
                            json={"spec": {"components": [{"name": "tool_call", "params": {"strict": 1}}]}})
    assert bad.status_code == 422 and "strict" in bad.text  # checked as the request is parsed


async def test_kept_scores_are_read_by_trajectory_and_summed_up_by_job(client: httpx.AsyncClient,
                                                                       session: Any) -> None:
    from sqlalchemy import select

    from shared.db.models import TrajectoryRow
    from tests.services.reward.conftest import WEATHER_TRUTH, store_rollout

    job_id = await store_rollout(session, [({"ground_truth": WEATHER_TRUTH}, [("get_weather", {"city": "Paris"})])] * 2)
    await session.commit()
    ids = [str(i) for i in (await session.scalars(select(TrajectoryRow.id).where(TrajectoryRow.job_id == job_id)))]
    first = {"components": [{"name": "tool_call", "weight": 1.0}]}
    second = {"components": [{"name": "tool_call", "weight": 0.5}, {"name": "length", "weight": 0.0}]}
    for spec, scores in ((first, (1.0, 0.0)), (second, (0.5, 0.25))):
        results = [{"trajectory_id": tid, "score": s, "records": [
            {"component": "tool_call", "version": "1", "weight": 1.0, "score": s * 2 if spec is second else s}]}
            for tid, s in zip(ids, scores, strict=True)]
        resp = await client.post("/v1/rewards/record", json={"spec": spec, "results": results, "job_id": str(job_id)})
        assert resp.status_code == 200, resp.text
    items = (await client.post("/v1/rewards/query", json={"trajectory_ids": ids})).json()["items"]
    assert len(items) == 8 and {i["trajectory_id"] for i in items} == set(ids)
    assert [i["created_at"] for i in items] == sorted(i["created_at"] for i in items)  # oldest first
    newest = {i["trajectory_id"]: i["score"] for i in items if i["component"] == "total"}
    assert newest == {ids[0]: 0.5, ids[1]: 0.25} and all(i["job_id"] == str(job_id) for i in items)
    totals = (await client.post("/v1/rewards/query", json={"trajectory_ids": [ids[0]], "components": ["total"]}))
    assert [i["score"] for i in totals.json()["items"]] == [1.0, 0.5]
    summary = (await client.get("/v1/rewards/summary", params={"job_id": str(job_id)})).json()
    assert summary == {"job_id": str(job_id), "components": {"tool_call": pytest.approx((1.0 + 0.0 + 1.0 + 0.5) / 4)}}
    empty = (await client.get("/v1/rewards/summary", params={"job_id": str(uuid.uuid4())})).json()
    assert empty["components"] == {}
    assert (await client.post("/v1/rewards/query", json={"trajectory_ids": ["x"]})).status_code == 422
