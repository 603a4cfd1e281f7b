"""The read-only rollout views (job list, stats, groups, one trajectory, search) over a real job.

The job runs in-process through the rollout app with the SCRIPTED policy
(tests/services/rollout/scripted.py); env, parser, reward scoring and storage
are real.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from services.rollout.app import SERVICE
from shared.db.models import RolloutJobRow, TrajectoryGroupRow, TrajectoryRow
from shared.web.state import get_app_state
from tests.services.rollout import scripted  # noqa: F401 - registers the scripted policy
from tests.services.rollout.test_service import REWARD, TRUTH


@pytest.fixture
async def client(make_client: Any) -> httpx.AsyncClient:
    return await make_client(SERVICE)


async def _job(client: httpx.AsyncClient) -> str:
    texts = ["What is the status of item A1?", "Status of A1?", "A1 while the upstream is down"]
    tasks = [{"id": f"t{i}", "messages": [{"role": "user", "content": t}], "ground_truth": TRUTH}
             for i, t in enumerate(texts)]
    body = {"tasks": tasks, "group_size": 2, "env": {"name": "tool_routing"}, "reward": REWARD, "mode": "messages",
            "policy": {"backend": {"name": "scripted"}}, "shard_size": 8, "limits": {"max_turns": 3}}
    resp = await client.post("/v1/rollouts", json=body)
    assert resp.status_code == 202, resp.text
    await get_app_state(client.app).dispatcher.drain()  # type: ignore[attr-defined]
    return str(resp.json()["id"])


async def _pages(client: httpx.AsyncClient, path: str, **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = (await client.get(path, params={**params, "offset": offset, "limit": 1})).json()
        items += page["items"]
        offset = page["next_offset"]
    return items


async def test_job_list_stats_groups_and_members(client: httpx.AsyncClient) -> None:
    job_id = await _job(client)
    listed = (await client.get("/v1/rollouts", params={"status": "succeeded"})).json()["items"]
    job = next(j for j in listed if j["id"] == job_id)
    assert job["backend"] == "scripted" and job["group_size"] == 2 and job["mean_reward"] is not None
    assert job["counts"]["trajectories"] == 6
    assert not [j for j in (await client.get("/v1/rollouts", params={"status": "failed"})).json()["items"]
                if j["id"] == job_id]
    stats = (await client.get(f"/v1/rollouts/{job_id}/stats")).json()
    assert stats["trajectories"] == 6 and not stats["sampled"]
    assert stats["stop_reasons"] == {"stop": 4, "api_error": 2}
    assert stats["reward_histogram"]["n"] == 6 and sum(stats["reward_histogram"]["counts"]) == 6
    assert set(stats["turn_latency_s"]) == {"p50", "p90", "p99", "max"} and len(stats["group_rewards"]) == 3
    [failure] = stats["failures"]
    assert failure["code"] == "upstream_unavailable" and failure["count"] == 2
    assert "scripted upstream is down" in failure["message"] and len(failure["trajectory_ids"]) == 2
    groups = await _pages(client, f"/v1/rollouts/{job_id}/groups")
    assert [g["task_id"] for g in groups] == ["t0", "t1", "t2"] and all(g["members"] == 2 for g in groups)
    group = (await client.get(f"/v1/rollouts/{job_id}/groups/{groups[0]['id']}")).json()
    assert group["task"]["id"] == "t0" and [m["sample_index"] for m in group["member_list"]] == [0, 1]
    member = group["member_list"][0]
    assert member["tools_called"] == ["query_status", "respond"] and member["parse_statuses"] == {"ok": 2}
    assert set(member["components"]) == {"tool_call", "length"} and member["advantage"] is not None
    assert member["reward"] == pytest.approx(group["rewards"][0])
    assert "respond" in member["last_reply"] and "A1 is shipped." in member["last_reply"]
    other = await _job(client)
    wrong = await client.get(f"/v1/rollouts/{other}/groups/{groups[0]['id']}")
    assert wrong.status_code == 404 and "no group" in wrong.text


async def test_one_trajectory_with_reward_provenance(client: httpx.AsyncClient) -> None:
    job_id = await _job(client)
    item = (await client.get(f"/v1/rollouts/{job_id}/trajectories", params={"limit": 1})).json()["items"][0]
    detail = (await client.get(f"/v1/trajectories/{item['id']}")).json()
    assert detail["job_id"] == job_id and detail["task_id"] == "t0" and detail["tokens"] is None
    assert detail["messages"] == item["messages"] and detail["steps"][0]["parse_statuses"] == ["ok"]
    assert {r["component"] for r in detail["rewards"]} == {"tool_call", "length", "total"}
    assert all(r["spec_hash"] and r["version"] for r in detail["rewards"])
    assert detail["reward"] == pytest.approx(item["reward"]) and detail["policy"]["backend"]["name"] == "scripted"
    assert (await client.get(f"/v1/trajectories/{uuid.uuid4()}")).status_code == 404
    assert (await client.get("/v1/trajectories/not-a-uuid")).status_code == 422


async def test_token_data_and_teacher_logprobs_come_back(client: httpx.AsyncClient, session: Any) -> None:
    job = RolloutJobRow(spec={"mode": "tokens"}, total_groups=1, status="succeeded")
    session.add(job)
    await session.flush()
    group = TrajectoryGroupRow(job_id=job.id, task_id="t")
    session.add(group)
    await session.flush()
    row = TrajectoryRow(job_id=job.id, group_id=group.id, task_id="t", messages=[{"role": "user", "content": "x"}],
                        prompt_ids=[1, 2], response_ids=[3, 4, 5], loss_mask=[1, 0, 1], logprobs=[-0.1, None, -0.3],
                        teacher_logprobs=[-0.2, None, -0.1], meta={"advantage": 0.5})
    session.add(row)
    await session.commit()
    detail = (await client.get(f"/v1/trajectories/{row.id}")).json()
    assert detail["tokens"]["response_ids"] == [3, 4, 5] and detail["tokens"]["loss_mask"] == [1, 0, 1]
    assert detail["tokens"]["teacher_logprobs"] == [-0.2, None, -0.1] and detail["advantage"] == 0.5
    group_view = (await client.get(f"/v1/rollouts/{job.id}/groups/{group.id}")).json()
    assert group_view["member_list"][0]["sampled_tokens"] == 2 and group_view["member_list"][0]["prompt_tokens"] == 2


async def test_search_filters_combine_and_pages_continue(client: httpx.AsyncClient) -> None:
    job_id = await _job(client)
    base = {"job_id": job_id}
    everything = await _pages(client, "/v1/trajectories", **base)
    assert len(everything) == 6 and len({t["id"] for t in everything}) == 6
    assert {t["id"] for t in await _pages(client, "/v1/trajectories", **base, tool="respond")} == {
        t["id"] for t in everything if "respond" in t["tools_called"]}
    down = await _pages(client, "/v1/trajectories", **base, stop_reason="api_error")
    assert len(down) == 2 and all(t["task_id"] == "t2" for t in down)
    shipped = await _pages(client, "/v1/trajectories", **base, q="a1 IS SHIPPED")
    assert len(shipped) == 4 and all("shipped" in t["snippet"] for t in shipped)
    assert await _pages(client, "/v1/trajectories", **base, q="no such words anywhere") == []
    assert await _pages(client, "/v1/trajectories", **base, tool="query") == []  # exact tool names only
    top = max(t["reward"] for t in everything)
    best = await _pages(client, "/v1/trajectories", **base, min_reward=top)
    assert best and all(t["reward"] >= top for t in best)
    low = await _pages(client, "/v1/trajectories", **base, max_reward=top - 1e-9)
    assert len(best) + len(low) == 6
    assert len(await _pages(client, "/v1/trajectories", **base, task_id="t1")) == 2
    bad = await client.get("/v1/trajectories", params={"min_reward": 2, "max_reward": 1})
    assert bad.status_code == 422 and "min_reward" in bad.text
    assert (await client.get("/v1/trajectories", params={"limit": 0})).status_code == 422


async def test_browse_routes_need_a_key(make_client: Any) -> None:
    anonymous = await make_client(SERVICE, authenticated=False)
    for path in ("/v1/rollouts", f"/v1/rollouts/{uuid.uuid4()}/stats", "/v1/trajectories",
                 f"/v1/trajectories/{uuid.uuid4()}", f"/v1/rollouts/{uuid.uuid4()}/groups"):
        assert (await anonymous.get(path)).status_code == 401, path


async def test_browse_on_the_embedded_sqlite_default(settings: Any, tmp_path: Any) -> None:
    import asyncio

    from shared.auth import create_key
    from shared.db.migrate import upgrade
    from shared.db.session import create_engine_for, make_sessionmaker, session_scope
    from shared.web import create_app

    url = f"sqlite+aiosqlite:///{tmp_path / 'tf.db'}"
    await asyncio.to_thread(upgrade, url)
    local = settings.model_copy(update={"database_url": url})
    engine = create_engine_for(local)
    async with session_scope(make_sessionmaker(engine)) as session:
        _, key = await create_key(session, "sqlite", salt=local.key_salt)
    await engine.dispose()
    app = create_app(SERVICE, settings=local)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test",
            headers={"authorization": f"Bearer {key}"}) as client:
        client.app = app  # type: ignore[attr-defined]
        job_id = await _job(client)
        stats = (await client.get(f"/v1/rollouts/{job_id}/stats")).json()
        assert stats["trajectories"] == 6 and stats["failures"][0]["count"] == 2
        assert (await client.get("/v1/rollouts")).json()["items"][0]["mean_reward"] is not None
        assert len(await _pages(client, "/v1/trajectories", job_id=job_id, tool="respond")) == 4
        assert len(await _pages(client, "/v1/trajectories", job_id=job_id, q="IS SHIPPED")) == 4
        top = max(t["reward"] for t in await _pages(client, "/v1/trajectories", job_id=job_id))
        assert await _pages(client, "/v1/trajectories", job_id=job_id, min_reward=top)
        groups = (await client.get(f"/v1/rollouts/{job_id}/groups")).json()["items"]
        assert (await client.get(f"/v1/rollouts/{job_id}/groups/{groups[0]['id']}")).json()["member_list"]


async def test_a_rescore_reaches_listings_components_and_provenance(client: httpx.AsyncClient,
                                                                      make_client: Any) -> None:
    """The reward service re-scores the job and hands the rollout its newest totals (its API, not its tables)."""
    from services.reward.app import SERVICE as REWARD_SERVICE

    job_id = await _job(client)
    before = {t["id"]: t["reward"] for t in await _pages(client, "/v1/trajectories", job_id=job_id)}
    mean_before = next(j for j in (await client.get("/v1/rollouts")).json()["items"] if j["id"] == job_id)
    assert any(before.values()), before
    reward = await make_client(REWARD_SERVICE)
    halved = {"components": [{"name": "tool_call", "weight": 0.5}, {"name": "length", "weight": 0.0}]}
    started = await reward.post(f"/v1/rollouts/{job_id}/rescore", json={"spec": halved})
    assert started.status_code == 202, started.text
    await get_app_state(reward.app).dispatcher.drain()  # type: ignore[attr-defined]
    after = {t["id"]: t["reward"] for t in await _pages(client, "/v1/trajectories", job_id=job_id)}
    assert set(after) == set(before)
    for tid, old in before.items():
        assert (after[tid] is None) if old is None else after[tid] == pytest.approx(old / 2), (tid, old)
    page = (await client.get(f"/v1/rollouts/{job_id}/trajectories", params={"limit": 1000})).json()["items"]
    assert {i["id"]: i["reward"] for i in page} == after
    job = next(j for j in (await client.get("/v1/rollouts")).json()["items"] if j["id"] == job_id)
    assert job["mean_reward"] == pytest.approx(mean_before["mean_reward"] / 2)
    top = max(v for v in after.values() if v is not None)
    assert {t["id"] for t in await _pages(client, "/v1/trajectories", job_id=job_id, min_reward=top)} == {
        tid for tid, v in after.items() if v is not None and v >= top}
    scored = next(tid for tid, v in after.items() if v)
    detail = (await client.get(f"/v1/trajectories/{scored}")).json()
    assert len({r["spec_hash"] for r in detail["rewards"]}) == 2 and len(detail["rewards"]) == 6
    assert detail["reward"] == pytest.approx(after[scored]) and detail["rewards"][-1]["spec_hash"] == \
        started.json()["spec_hash"]
    group_id = detail["group_id"]
    member = next(m for m in (await client.get(f"/v1/rollouts/{job_id}/groups/{group_id}")).json()["member_list"]
                  if m["id"] == scored)
    assert member["reward"] == pytest.approx(after[scored]) and set(member["components"]) == {"tool_call", "length"}


async def test_kept_rewards_touch_only_the_named_jobs_trajectories(client: httpx.AsyncClient) -> None:
    job_id, other = await _job(client), await _job(client)
    mine = (await client.get(f"/v1/rollouts/{job_id}/trajectories")).json()["items"]
    theirs = (await client.get(f"/v1/rollouts/{other}/trajectories")).json()["items"]
    totals = [{"trajectory_id": mine[0]["id"], "score": 0.125}, {"trajectory_id": mine[1]["id"], "score": None},
              {"trajectory_id": theirs[0]["id"], "score": 9.0}, {"trajectory_id": str(uuid.uuid4()), "score": 1.0}]
    resp = await client.post(f"/v1/rollouts/{job_id}/rewards", json={"totals": totals})
    assert resp.status_code == 200 and resp.json() == {"kept": 2}
    again = (await client.get(f"/v1/rollouts/{job_id}/trajectories")).json()["items"]
    assert again[0]["reward"] == 0.125
    assert again[1]["reward"] == again[1]["metadata"]["reward"]  # no total kept: the live reward shows
    assert (await client.get(f"/v1/rollouts/{other}/trajectories")).json()["items"][0]["reward"] == theirs[0]["reward"]
    missing = await client.post(f"/v1/rollouts/{uuid.uuid4()}/rewards", json={"totals": []})
    assert missing.status_code == 404
