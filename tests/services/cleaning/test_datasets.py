"""Dataset uploads through the HTTP API against Postgres: every line stored, bad ones with their error."""

from __future__ import annotations

import orjson

from services.cleaning.app import SERVICE
from tests.conftest import shared_data_dir


async def test_upload_real_rows_and_read_them_back(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SERVICE)
    body = (shared_data_dir() / "zh_mt_bench_gpt4.jsonl").read_bytes()
    created = await client.post("/v1/datasets", params={"name": "zh"}, content=body,
                                headers={"content-type": "application/x-ndjson"})
    assert created.status_code == 201, created.text
    info = created.json()
    assert info["row_count"] == body.count(b"\n") and info["invalid_count"] == 0
    page = await client.get(f"/v1/datasets/{info['id']}/rows", params={"limit": 50})
    first = orjson.loads(body.split(b"\n", 1)[0])
    assert page.json()["items"][0]["data"] == first
    assert page.json()["next_offset"] == 50
    rest = await client.get(f"/v1/datasets/{info['id']}/rows", params={"offset": 50, "limit": 1000})
    assert len(rest.json()["items"]) == info["row_count"] - 50 and rest.json()["next_offset"] is None


async def test_bad_lines_are_kept_with_their_error(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SERVICE)
    body = b'{"messages": []}\n{broken\n[1, 2]\n{"s": "\\ud800"}\n\xff\n{"ok": "x\xe2\x80\xa8y"}\n'
    info = (await client.post("/v1/datasets", params={"name": "bad"}, content=body)).json()
    assert info["row_count"] == 6 and info["invalid_count"] == 4
    assert [e["row_index"] for e in info["invalid_lines"]] == [1, 2, 3, 4]
    rows = (await client.get(f"/v1/datasets/{info['id']}/rows")).json()["items"]
    assert rows[5]["data"] == {"ok": "x\u2028y"}
    assert rows[2]["data"] is None and "JSON object" in rows[2]["error"]


async def test_empty_upload_and_missing_name_are_4xx(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SERVICE)
    empty = await client.post("/v1/datasets", params={"name": "e"}, content=b"\n \n")
    assert empty.status_code == 400 and "no JSONL rows" in empty.json()["detail"]
    assert (await client.post("/v1/datasets", content=b"{}")).status_code == 422
