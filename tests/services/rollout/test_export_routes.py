"""GET /v1/rollouts/{id}/export through an app (auth, problem details, Parquet and JSONL downloads)."""

from __future__ import annotations

import io
import json
import uuid

import pyarrow.parquet as pq
import pytest

from services.rollout.export_routes import export_router
from shared.db.models import RolloutJobRow, TrajectoryGroupRow, TrajectoryRow
from shared.web import ServiceSpec

SPEC = ServiceSpec(name="rollout", routers=[export_router])


async def _job(session) -> RolloutJobRow:
    job = RolloutJobRow(spec={}, total_groups=1, status="succeeded")
    session.add(job)
    await session.flush()
    group = TrajectoryGroupRow(job_id=job.id, task_id="t1")
    session.add(group)
    await session.flush()
    session.add_all([TrajectoryRow(job_id=job.id, group_id=group.id, task_id="t1", sample_index=i,
                                   messages=[{"role": "user", "content": "hi"}], prompt_ids=[1],
                                   response_ids=[2, 3], loss_mask=[1, 1], logprobs=[-0.1, -0.2],
                                   stop_reason="stop", meta={"advantage": 1.0 - 2 * i}) for i in range(2)])
    await session.commit()  # joins the test's outer transaction, rolled back afterwards
    return job


async def test_export_downloads_parquet_and_jsonl(make_client, session) -> None:
    job = await _job(session)
    client = await make_client(SPEC)
    resp = await client.get(f"/v1/rollouts/{job.id}/export")
    assert resp.status_code == 200, resp.text
    assert f"rollout-{job.id}.parquet" in resp.headers["content-disposition"]
    rows = pq.read_table(io.BytesIO(resp.content)).to_pylist()
    assert [r["sample_index"] for r in rows] == [0, 1]
    assert rows[1]["advantages"] == [-1.0, -1.0] and rows[0]["logprobs"] == pytest.approx([-0.1, -0.2])
    resp = await client.get(f"/v1/rollouts/{job.id}/export", params={"format": "jsonl"})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/x-ndjson")
    assert [json.loads(line)["advantage"] for line in resp.content.splitlines()] == [1.0, -1.0]


async def test_bad_requests_get_problem_details(make_client) -> None:
    client = await make_client(SPEC)
    missing = await client.get(f"/v1/rollouts/{uuid.uuid4()}/export")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    bad_format = await client.get(f"/v1/rollouts/{uuid.uuid4()}/export", params={"format": "csv"})
    assert bad_format.status_code == 422 and "parquet" in bad_format.text
    assert (await client.get("/v1/rollouts/not-a-uuid/export")).status_code == 422
    anonymous = await make_client(SPEC, authenticated=False)
    assert (await anonymous.get(f"/v1/rollouts/{uuid.uuid4()}/export")).status_code == 401
