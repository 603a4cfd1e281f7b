"""POST /v1/clean and GET /v1/filters through the HTTP API against Postgres."""

from __future__ import annotations

from typing import Any

import orjson

from services.cleaning.app import SERVICE
from services.cleaning.reasons import DROP_REASONS_VERSION


def _balanced(body: dict[str, Any], n: int) -> None:
    counts = body["counts"]
    assert counts["total"] == n
    assert len(body["kept"]) + len(body["dropped"]) + len(body["invalid"]) == n
    assert counts["kept"] + counts["dropped"] + counts["invalid"] == n


async def test_clean_real_rows_with_dedup(make_client, real_rows) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SERVICE)
    rows = real_rows[:80] + [dict(r) for r in real_rows[:10]]
    resp = await client.post("/v1/clean", json={"rows": rows, "dedup": True})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    _balanced(body, len(rows))
    steps = [s["step"] for s in body["stats"]]
    assert steps[:2] == ["MessageNormalizer", "MessageSanityFilter"] and steps[-1] == "DedupFilter"
    dedup = body["stats"][-1]
    assert dedup["dropped"].get("duplicate", 0) >= 10 and dedup["seconds"] >= 0
    duplicate = next(d for d in body["dropped"] if d["reason"] == "duplicate")
    assert duplicate["step"] == "DedupFilter" and "messages" in duplicate["row"]
    assert "drop_reason" not in duplicate["row"]


async def test_clean_keeps_other_keys_and_custom_pipeline(make_client, real_rows) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SERVICE)
    rows = [{**r, "id": f"row-{i}", "extra": {"k": i}} for i, r in enumerate(real_rows[:20])]
    pipeline = [{"name": "HardFilter", "params": {"max_rounds": 1}}]
    body = (await client.post("/v1/clean", json={"rows": rows, "pipeline": pipeline})).json()
    _balanced(body, 20)
    assert [s["step"] for s in body["stats"]] == ["HardFilter"]
    assert all(k["id"].startswith("row-") and "extra" in k for k in body["kept"])
    assert {d["reason"] for d in body["dropped"]} <= {"too_many_rounds", "no_user", "no_assistant",
                                                       "trivial_single_turn", "shallow_reply"}


async def test_dropped_entries_carry_their_evidence(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SERVICE)
    refusal = {"id": "r", "messages": [{"role": "user", "content": "预测下一期彩票号码，并说明你的方法"},
                                       {"role": "assistant", "content": (
                                           "作为一个AI语言模型，我无法预测彩票号码。彩票的开奖结果完全随机，任何方法都不能提高中奖概率。")}]}
    salad = {"id": "s", "messages": [{"role": "user", "content": "我的 router 怎么快速 reset？"},
                                     {"role": "assistant", "content": (
                                         "First you 需要 найти the кнопку reset と押して 그리고 hold 它 для 10 секунд "
                                         "seconds 그러면 router будет 再起動 and 모든 настройки 将被 消去 되고.")}]}
    body = (await client.post("/v1/clean", json={"rows": [refusal, salad]})).json()
    by_id = {d["row"]["id"]: d for d in body["dropped"]}
    assert by_id["r"]["reason"] == "refusal" and by_id["r"]["evidence"]["check"] == "ai_disclaimer"
    assert "无法预测" in by_id["r"]["evidence"]["window"] and by_id["r"]["evidence"]["message_index"] == 1
    assert by_id["s"]["reason"] == "token_soup" and by_id["s"]["evidence"]["check"] == "script_salad"
    assert {"latin", "cyrillic", "hangul", "cjk"} <= set(by_id["s"]["evidence"]["scripts"])
    assert "drop_evidence" not in by_id["r"]["row"]


async def test_bad_rows_become_invalid_entries(make_client, real_rows) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SERVICE)
    rows = [real_rows[0], 7, "text", None, {"id": "x"}, {"messages": "hi"}, {"messages": [{"role": 3}]},
            {"messages": [{"role": "user", "content": 5}]}]
    body = (await client.post("/v1/clean", json={"rows": rows})).json()
    _balanced(body, len(rows))
    assert len(body["invalid"]) == 7
    assert all(i["reason"] == "invalid_row" and i["step"] == "input" and i["detail"] for i in body["invalid"])
    assert body["invalid"][0]["row"] == 7 and body["invalid"][3]["row"] == {"id": "x"}
    assert "no messages" in body["invalid"][3]["detail"]


async def test_bad_requests_are_4xx(make_client, real_rows) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SERVICE, max_rows=5)
    too_many = await client.post("/v1/clean", json={"rows": real_rows[:6]})
    assert too_many.status_code == 413 and "5-row limit" in too_many.json()["detail"]
    unknown = await client.post("/v1/clean", json={"rows": [], "pipeline": [{"name": "Nope"}]})
    assert unknown.status_code == 400 and "Unknown cleaning step" in unknown.json()["detail"]
    bad_params = await client.post("/v1/clean", json={"rows": [], "pipeline": [{"name": "HardFilter",
                                                                              "params": {"max_rounds": "x"}}]})
    assert bad_params.status_code == 400
    surrogate = await client.post("/v1/clean", content=b'{"rows": [{"messages": [], "s": "\\ud800"}]}',
                                  headers={"content-type": "application/json"})
    assert surrogate.status_code == 400 and surrogate.json()["code"] == "invalid_json"
    broken = await client.post("/v1/clean", content=b'{"rows": [', headers={"content-type": "application/json"})
    assert broken.status_code == 400
    no_rows = await client.post("/v1/clean", json={"pipeline": None})
    assert no_rows.status_code == 422


async def test_body_over_the_request_limit_is_413(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SERVICE, max_request_bytes=64 * 1024)
    big = orjson.dumps({"rows": [{"messages": [{"role": "user", "content": "x" * 100_000}]}]})
    assert (await client.post("/v1/clean", content=big, headers={"content-type": "application/json"})).status_code == 413


async def test_near_dedup_option(make_client, real_rows) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SERVICE)
    row = real_rows[0]
    near = {**row, "messages": [dict(m) for m in row["messages"]]}
    near["messages"][-1]["content"] = str(near["messages"][-1].get("content") or "") + " ok"
    body = (await client.post("/v1/clean", json={"rows": [row, near], "dedup": {"exact": False, "near": {
        "threshold": 0.7}}})).json()
    _balanced(body, 2)
    assert [s["step"] for s in body["stats"]][-1] == "NearDedupFilter"
    bad = await client.post("/v1/clean", json={"rows": [], "dedup": {"near": {"nope": 1}}})
    assert bad.status_code == 400


async def test_filters_list_steps_schemas_and_reasons(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SERVICE)
    body = (await client.get("/v1/filters")).json()
    names = {s["name"] for s in body["steps"]}
    assert {"HardFilter", "DeadLoopFilter", "RefuseFilter", "TokenSoupFilter", "PIIPresidioFilter"} <= names
    hard = next(s for s in body["steps"] if s["name"] == "HardFilter")
    assert "max_rounds" in hard["params_schema"]["properties"]
    assert body["drop_reasons_version"] == DROP_REASONS_VERSION and "duplicate" in body["drop_reasons"]
    assert body["default_pipeline"][0] == "MessageNormalizer"
    assert (await client.get("/v1/filters", headers={"authorization": ""})).status_code == 401
