"""The read-only cleaning views: the job list, rows by outcome/step/reason with evidence, one row.

Jobs run for real (in-process tasks in their own sessions), so the app gets its own engine on the
run's database instead of the rolled-back test transaction.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from services.cleaning.app import SERVICE
from shared.auth import create_key
from shared.db.session import create_engine_for, make_sessionmaker, session_scope
from shared.settings import Settings
from shared.web import create_app
from shared.web.state import get_app_state
from tests.conftest import shared_data_dir


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    engine = create_engine_for(settings)
    async with session_scope(make_sessionmaker(engine)) as session:
        _, key = await create_key(session, "browse-test", salt=settings.key_salt)
    await engine.dispose()
    app = create_app(SERVICE, settings=settings)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test",
            headers={"authorization": f"Bearer {key}"}) as c:
        c.app = app  # type: ignore[attr-defined]
        yield c


def _body() -> bytes:
    lines = (shared_data_dir() / "glaive_toolcall_en_llamafactory.jsonl").read_bytes().splitlines()[:30]
    return b"\n".join(lines + lines[:5] + [b"{broken", b'{"id": "no-messages"}']) + b"\n"


async def _job(client: httpx.AsyncClient, name: str) -> dict[str, Any]:
    ds = (await client.post("/v1/datasets", params={"name": name}, content=_body())).json()
    created = await client.post("/v1/clean/jobs", json={"dataset_id": ds["id"], "batch_size": 10})
    assert created.status_code == 202, created.text
    await get_app_state(client.app).dispatcher.drain()  # type: ignore[attr-defined]
    for _ in range(100):
        job = (await client.get(f"/v1/clean/jobs/{created.json()['id']}")).json()
        if job["status"] == "succeeded":
            return dict(job)
        await asyncio.sleep(0.05)
    raise AssertionError("the cleaning job did not finish")


async def test_job_list_newest_first_with_dataset_names(client: httpx.AsyncClient) -> None:
    first, second = await _job(client, "browse-a"), await _job(client, "browse-b")
    page = (await client.get("/v1/clean/jobs", params={"limit": 2})).json()
    assert [j["id"] for j in page["items"]] == [second["id"], first["id"]] and page["next_offset"] == 2
    assert page["dataset_names"][second["dataset_id"]] == "browse-b"
    running = (await client.get("/v1/clean/jobs", params={"status": "running"})).json()["items"]
    assert not {first["id"], second["id"]} & {j["id"] for j in running}


async def test_rows_by_outcome_step_and_reason_with_evidence(client: httpx.AsyncClient) -> None:
    job = await _job(client, "browse-rows")
    job_id = job["id"]
    summary = (await client.get(f"/v1/clean/jobs/{job_id}/dropped/summary")).json()["items"]
    for item in summary:
        rows = (await client.get(f"/v1/clean/jobs/{job_id}/rows", params={
            "outcome": "dropped", "step": item["step"], "reason": item["reason"], "limit": 500})).json()["items"]
        assert len(rows) == item["count"]
        assert all(r["step"] == item["step"] and r["reason"] == item["reason"] for r in rows)
    invalid = (await client.get(f"/v1/clean/jobs/{job_id}/rows", params={"reason": "invalid_row"})).json()["items"]
    assert len(invalid) == 2 and all("drop_detail" in r["evidence"] for r in invalid)
    assert any("no messages" in r["evidence"]["drop_detail"] for r in invalid)
    dups = (await client.get(f"/v1/clean/jobs/{job_id}/rows", params={"reason": "duplicate"})).json()["items"]
    assert len(dups) >= 5 and all(r["row"]["messages"] and "drop_step" not in r["row"] for r in dups)
    kept: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = (await client.get(f"/v1/clean/jobs/{job_id}/rows", params={"outcome": "kept", "offset": offset,
                                                                            "limit": 7})).json()
        kept += page["items"]
        offset = page["next_offset"]
    assert len(kept) == job["kept"] and [r["row_index"] for r in kept] == sorted(r["row_index"] for r in kept)
    one = (await client.get(f"/v1/clean/jobs/{job_id}/rows/{dups[0]['row_index']}")).json()
    assert one == dups[0]
    missing = await client.get(f"/v1/clean/jobs/{job_id}/rows/99999")
    assert missing.status_code == 404 and "99999" in missing.text
    assert (await client.get(f"/v1/clean/jobs/{job_id}/rows", params={"outcome": "lost"})).status_code == 422
    assert (await client.get(f"/v1/clean/jobs/{uuid.uuid4()}/rows")).status_code == 404


async def test_browse_routes_need_a_key(make_client: Any) -> None:
    anonymous = await make_client(SERVICE, authenticated=False)
    for path in ("/v1/clean/jobs", f"/v1/clean/jobs/{uuid.uuid4()}/rows", f"/v1/clean/jobs/{uuid.uuid4()}/rows/1"):
        assert (await anonymous.get(path)).status_code == 401, path
