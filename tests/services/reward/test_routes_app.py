"""The reward service as deployed (auth on, problem details): bad input, user processors, rescore jobs."""

from __future__ import annotations

import math

import httpx
import pytest

from services.reward.app import SERVICE
from shared.web.state import get_app_state
from tests.services.reward.conftest import WEATHER_TRUTH, build_traj, store_rollout

PROCS = "tests.services.reward.processors_for_tests"


def _traj(**kwargs) -> dict:
    return build_traj(**kwargs).model_dump(mode="json")


def _problem(resp: httpx.Response, status: int, code: str) -> dict:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    body = resp.json()
    assert body["status"] == status and body["code"] == code
    return body


@pytest.fixture
async def client(make_client) -> httpx.AsyncClient:
    # One batch per rescore here: the test harness shares one database connection, so concurrent in-process
    # batches would interleave savepoints; several batches run in test_tasks (in-process and on Celery).
    return await make_client(SERVICE, reward_processor_modules=[PROCS], reward_rescore_batch_size=10)


async def test_auth_is_required(make_client) -> None:
    anonymous = await make_client(SERVICE, authenticated=False)
    _problem(await anonymous.post("/v1/rewards/score", json={"trajectories": []}), 401, "invalid_api_key")
    _problem(await anonymous.get(f"/v1/rollouts/{'0' * 8}-0000-0000-0000-{'0' * 12}/rescore/{'a' * 64}"),
             401, "invalid_api_key")


async def test_unknown_component_lists_known_ones(client) -> None:
    body = {"trajectories": [_traj(calls=[])], "spec": {"components": [{"name": "tool_acc"}]}}
    problem = _problem(await client.post("/v1/rewards/score", json=body), 400, "unknown_reward_component")
    assert "'tool_acc'" in problem["detail"] and "tool_call" in problem["detail"] and "answer" in problem["detail"]


async def test_malformed_requests_are_4xx(client) -> None:
    traj = _traj(calls=[])
    _problem(await client.post("/v1/rewards/score", json={"trajectories": [traj], "ground_truths": ["not json"]}),
             422, "validation_failed")
    _problem(await client.post("/v1/rewards/score", json={"trajectories": [traj], "ground_truths": [None, None]}),
             400, "invalid_reward_spec")
    resp = await client.post("/v1/rewards/score", content=b'{"trajectories": [', headers={"content-type": "application/json"})
    assert resp.status_code in (400, 422) and resp.headers["content-type"].startswith("application/problem+json")
    nan_weight = b'{"trajectories": [], "spec": {"components": [{"name": "tool_call", "weight": NaN}]}}'
    resp = await client.post("/v1/rewards/score", content=nan_weight, headers={"content-type": "application/json"})
    assert "not valid JSON" in _problem(resp, 400, "invalid_json")["detail"]  # NaN is not JSON


async def test_bad_trajectories_are_per_row_results(client) -> None:
    trajs = [_traj(calls=[("get_weather", '{"city": "Par')]),       # malformed arguments
             _traj(calls=[("launch_rocket", {"city": "Paris"})]),   # a tool that does not exist
             {"messages": []},                                      # empty trajectory
             _traj(calls=[("get_weather", {"city": "Paris"})])]
    body = {"trajectories": trajs, "ground_truths": [WEATHER_TRUTH] * 4}
    resp = await client.post("/v1/rewards/score", json=body)
    assert resp.status_code == 200, resp.text
    malformed, unknown, empty, good = resp.json()["results"]
    assert malformed["status"] == "ok" and malformed["metrics"]["tool_call/malformed_args"] == 1.0
    assert malformed["score"] < 1.0 and unknown["score"] < malformed["score"]
    assert empty["status"] == "failed" and empty["error"] == "empty trajectory: no messages"
    assert good["score"] == pytest.approx(1.0)


async def test_user_processors_raise_hang_and_nan_per_trajectory(client) -> None:
    trajs = [_traj(calls=[("get_weather", {"city": "Paris"})], user="boom please"),
             _traj(calls=[("get_weather", {"city": "Paris"})])]
    spec = {"components": [{"name": "tool_call", "weight": 1.0}]}
    raising = {"trajectories": trajs, "ground_truths": [WEATHER_TRUTH] * 2, "spec": spec,
               "processors": [{"classpath": f"{PROCS}:RaisingProcessor", "name": "raiser", "weight": 0.5},
                              {"classpath": f"{PROCS}:LengthProcessor", "name": "len", "weight": 1.0,
                               "kwargs": {"scale": 0.25}}]}
    boom, fine = (await client.post("/v1/rewards/score", json=raising)).json()["results"]
    assert boom["status"] == "failed" and "RuntimeError: boom from user code" in boom["error"]
    assert fine["status"] == "ok" and fine["score"] == pytest.approx(1.0 + 0.5 * 1.0 + 0.25 * 2)
    assert [r["component"] for r in fine["records"]] == ["tool_call", "processor:raiser", "processor:len"]
    hanging = {**raising, "processors": [{"classpath": f"{PROCS}:HangingProcessor", "name": "slow", "timeout_s": 0.2}]}
    results = (await client.post("/v1/rewards/score", json=hanging)).json()["results"]
    assert all(r["status"] == "failed" and "timed out after 0.2s" in r["error"] for r in results)
    nan = {**raising, "processors": [{"classpath": f"{PROCS}.NaNProcessor", "name": "nan"}]}
    results = (await client.post("/v1/rewards/score", json=nan)).json()["results"]
    assert all(r["status"] == "failed" and "not a finite number" in r["error"] for r in results)
    outside = {**raising, "processors": [{"classpath": "os:system"}]}
    problem = _problem(await client.post("/v1/rewards/score", json=outside), 400, "invalid_reward_spec")
    assert "not in an allowed module" in problem["detail"]


async def test_nan_rewards_are_rejected_or_masked(client) -> None:
    resp = await client.post("/v1/advantages", content=b'{"groups": [{"rewards": [1.0, NaN, 0.0]}]}',
                             headers={"content-type": "application/json"})
    _problem(resp, 400, "invalid_json")
    # A missing reward (null, e.g. a failed trajectory) is masked, never propagated as NaN.
    group = (await client.post("/v1/advantages", json={"groups": [{"rewards": [1.0, None, 0.0]}]})).json()["groups"][0]
    assert group["masks"][1] == [0] and all(math.isfinite(a) for row in group["advantages"] for a in row)


async def test_rescore_job_through_the_app(client, session) -> None:
    good = ({"ground_truth": WEATHER_TRUTH}, [("get_weather", {"city": "Paris"})])
    job_id = await store_rollout(session, [good, good, ({"ground_truth": "{oops"}, [("get_weather", {})]), good, ({}, [])])
    await session.commit()
    dispatcher = get_app_state(client.app).dispatcher
    first = await client.post(f"/v1/rollouts/{job_id}/rescore", json={"spec": {}})
    assert first.status_code == 202, first.text
    started = first.json()
    assert (started["total"], started["batches"]) == (5, 1)
    await dispatcher.drain()
    progress = (await client.get(started["status_url"])).json()
    assert progress | {"job_id": None} == {"job_id": None, "spec_hash": started["spec_hash"], "total": 5, "scored": 3,
                                           "failed": 2, "skipped": 0, "pending": 0, "done": True}
    second = (await client.post(f"/v1/rollouts/{job_id}/rescore",
                                json={"spec": {"components": [{"name": "opd_tool_call"}]},
                                      "ground_truth_source": "meta"})).json()
    await dispatcher.drain()
    assert second["spec_hash"] != started["spec_hash"]
    assert (await client.get(started["status_url"])).json()["scored"] == 3  # old scores kept
    assert (await client.get(second["status_url"])).json()["done"] is True


async def test_rescore_errors(client, session) -> None:
    missing = "00000000-0000-0000-0000-000000000000"
    _problem(await client.post(f"/v1/rollouts/{missing}/rescore", json={"spec": {}}), 404, "not_found")
    _problem(await client.post(f"/v1/rollouts/{missing}/rescore", json={"spec": {"components": [{"name": "nope"}]}}),
             400, "unknown_reward_component")
    _problem(await client.post(f"/v1/rollouts/{missing}/rescore", json={}), 422, "validation_failed")
    job_id = await store_rollout(session, [])
    await session.commit()
    _problem(await client.get(f"/v1/rollouts/{job_id}/rescore/{'a' * 64}"), 404, "not_found")
    _problem(await client.get(f"/v1/rollouts/{job_id}/rescore/not-a-hash"), 422, "validation_failed")
    empty = await client.post(f"/v1/rollouts/{job_id}/rescore", json={"spec": {}})
    assert empty.status_code == 202 and empty.json()["batches"] == 0
    assert (await client.get(empty.json()["status_url"])).json()["done"] is True


async def test_sdk_reward_methods(client, session) -> None:
    from shared.client import AsyncClient
    from shared.errors import InvalidInput

    key = client.headers["authorization"].removeprefix("Bearer ")
    job_id = await store_rollout(session, [({"ground_truth": WEATHER_TRUTH}, [("get_weather", {"city": "Paris"})])])
    await session.commit()
    async with AsyncClient("http://test", api_key=key, transport=httpx.ASGITransport(app=client.app)) as tf:
        scored = await tf.score([_traj(calls=[("get_weather", {"city": "Paris"})])], ground_truths=[WEATHER_TRUTH])
        assert scored["results"][0]["score"] == pytest.approx(1.0)
        adv = await tf.advantages([{"rewards": [1.0, 0.0]}], estimator="rloo")
        assert adv["groups"][0]["advantages"] == [[1.0], [-1.0]]
        started = await tf.rescore(str(job_id), {"components": [{"name": "tool_call"}]})
        await get_app_state(client.app).dispatcher.drain()
        status = await tf.rescore_status(str(job_id), started["spec_hash"])
        assert (status["scored"], status["done"]) == (1, True)
        with pytest.raises(InvalidInput, match="no reward component named 'nope'"):
            await tf.score([], spec={"components": [{"name": "nope"}]})


async def test_record_keeps_scores_for_stored_trajectories_once(client, session) -> None:
    from sqlalchemy import func, select

    from shared.db.models import RewardRow, TrajectoryRow

    good = ({"ground_truth": WEATHER_TRUTH}, [("get_weather", {"city": "Paris"})])
    job_id = await store_rollout(session, [good, good])
    await session.commit()
    ids = [str(i) for i in (await session.scalars(select(TrajectoryRow.id).where(TrajectoryRow.job_id == job_id)))]
    spec = {"components": [{"name": "tool_call"}]}
    scored = (await client.post("/v1/rewards/score", json={"trajectories": [_traj(calls=[("get_weather", {})])] * 2,
                                                           "spec": spec, "ground_truths": [WEATHER_TRUTH] * 2})).json()["results"]
    results = [{**r, "trajectory_id": i} for r, i in zip(scored, ids, strict=True)]
    first = await client.post("/v1/rewards/record", json={"spec": spec, "results": results})
    assert first.status_code == 200, first.text
    rows = sum(len(r["records"]) + 1 for r in results)  # each component's row and the total
    assert first.json()["inserted"] == rows == 4
    again = (await client.post("/v1/rewards/record", json={"spec": spec, "results": results})).json()
    assert again == {"spec_hash": first.json()["spec_hash"], "inserted": 0}  # a repeated record is a no-op
    count = await session.scalar(select(func.count()).select_from(RewardRow).where(
        RewardRow.spec_hash == again["spec_hash"]))
    assert count == rows
    _problem(await client.post("/v1/rewards/record", json={"spec": spec, "results": [
        {**results[0], "trajectory_id": "not-a-uuid"}]}), 422, "validation_failed")
    _problem(await client.post("/v1/rewards/record", json={"spec": {"components": [{"name": "nope"}]},
                                                           "results": results}), 400, "unknown_reward_component")
