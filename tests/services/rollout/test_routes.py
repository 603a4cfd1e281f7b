"""The rollout REST API through the service app (in-process dispatcher, SCRIPTED policy)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from services.rollout.app import SERVICE
from shared.web.state import get_app_state
from tests.services.rollout import scripted  # noqa: F401 - registers the scripted policy
from tests.services.rollout.test_service import REWARD, TRUTH


def body(**extra: Any) -> dict[str, Any]:
    """A two-task job over the tool-routing env, all groups in one shard."""
    tasks = [{"id": f"t{i}", "messages": [{"role": "user", "content": "What is the status of item A1?"}],
              "ground_truth": TRUTH} for i in range(2)]
    out: dict[str, Any] = {"tasks": tasks, "group_size": 2, "env": {"name": "tool_routing"}, "reward": REWARD,
                           "mode": "messages", "policy": {"backend": {"name": "scripted"}}, "shard_size": 8,
                           "limits": {"max_turns": 3}}
    out.update(extra)
    return out


@pytest.fixture
async def client(make_client: Any) -> httpx.AsyncClient:
    return await make_client(SERVICE)


async def _run(client: httpx.AsyncClient, payload: dict[str, Any]) -> str:
    resp = await client.post("/v1/rollouts", json=payload)
    assert resp.status_code == 202, resp.text
    created = resp.json()
    assert created["status"] == "pending" and created["total_groups"] == len(payload["tasks"])
    await get_app_state(client.app).dispatcher.drain()  # type: ignore[attr-defined]
    return str(created["id"])


def _events(text: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


async def test_job_status_trajectories_jsonl_and_events(client: httpx.AsyncClient) -> None:
    job_id = await _run(client, body())
    job = (await client.get(f"/v1/rollouts/{job_id}")).json()
    assert job["status"] == "succeeded" and job["progress"] == 1.0
    assert job["counts"] == {"stop_reason:stop": 4, "trajectories": 4, "failed": 0}
    page = (await client.get(f"/v1/rollouts/{job_id}/trajectories", params={"limit": 3})).json()
    assert len(page["items"]) == 3 and page["next_offset"] == 3
    item = page["items"][0]
    assert item["task_id"] == "t0" and item["sample_index"] == 0 and item["reward"] is not None
    assert item["metadata"]["advantage"] == 0.0 and item["messages"][0]["role"] == "user"
    rest = (await client.get(f"/v1/rollouts/{job_id}/trajectories", params={"offset": 3})).json()
    assert len(rest["items"]) == 1 and rest["next_offset"] is None
    lines = (await client.get(f"/v1/rollouts/{job_id}/trajectories", params={"format": "jsonl"})).text.splitlines()
    assert [json.loads(line)["id"] for line in lines] == [i["id"] for i in page["items"] + rest["items"]]
    events = _events((await client.get(f"/v1/rollouts/{job_id}/events")).text)
    kinds = [kind for kind, _ in events]
    assert kinds == ["group", "group", "progress", "end"] and events[-1][1] == {"status": "succeeded"}
    assert events[2][1]["done_groups"] == 2 and len(events[0][1]["rewards"]) == 2


async def test_cancel_a_finished_job_changes_nothing(client: httpx.AsyncClient) -> None:
    job_id = await _run(client, body())
    resp = await client.post(f"/v1/rollouts/{job_id}/cancel")
    assert resp.status_code == 200 and resp.json()["status"] == "succeeded"


def _problem(resp: httpx.Response, status: int, needle: str) -> None:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    assert needle in resp.text, resp.text


@pytest.mark.parametrize(("change", "needle"), [
    ({"tasks": [{"id": "lonely", "messages": [{"role": "system", "content": "hi"}]}]}, "lonely"),
    ({"tools": ["python", "teleport"], "env": None}, "teleport"),  # checked against the tools service
    ({"env": {"name": "nowhere"}}, "nowhere"),
    ({"limits": {"max_tokens_per_turn": 512, "max_total_tokens": 100}}, "max_tokens_per_turn"),
    ({"limits": {"timeout_s": 1, "tool_timeout_s": 5}}, "tool_timeout_s"),
    ({"policy": {"backend": {"name": "quantum"}}}, "quantum"),
    # A policy server by URL would bypass the gateway (no traces): it must be one of the gateway's upstreams.
    ({"policy": {"backend": {"name": "vllm", "base_url": "http://engine:8000", "model": "m"}}}, "gateway upstream"),
    ({"reward": {"components": [{"name": "vibes"}]}}, "vibes"),  # asked of the reward service
    ({"reward": {"components": [{"name": "tool_call", "params": {"strict": 1}}]}}, "strict"),
    ({"group_size": 0}, "group_size"),
    ({"tool_parser": "klingon"}, "klingon"),
])
async def test_bad_job_specs_are_refused_at_submission(client: httpx.AsyncClient, change: dict[str, Any],
                                                       needle: str) -> None:
    _problem(await client.post("/v1/rollouts", json=body(**change)), 422, needle)


async def test_unknown_job_is_404(client: httpx.AsyncClient) -> None:
    missing = uuid.uuid4()
    for path in ("", "/trajectories", "/events", "/trajectories?format=jsonl"):
        _problem(await client.get(f"/v1/rollouts/{missing}{path}"), 404, "no rollout job")
    _problem(await client.post(f"/v1/rollouts/{missing}/cancel"), 404, "no rollout job")


async def test_rollouts_need_a_key(make_client: Any) -> None:
    anonymous = await make_client(SERVICE, authenticated=False)
    assert (await anonymous.post("/v1/rollouts", json=body())).status_code == 401
