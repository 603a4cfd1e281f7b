"""DashScope reference, the rollout processor component: the dotted classpath
``functions.rollout.my_rollout.MyRolloutProcessor`` (no colon) loads through the one classpath
grammar (``shared.plugins``) under the allow-list, and the job's sampling and limits reach the
processor. The job runs for real: rollout app, in-process gateway, Postgres; the policy is the
local engine with a SCRIPTED reply (real tokenizer and engine path).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

import services.inference.service as inference_service
from services.inference.engine import Engine
from services.inference.scripted import scripted_model
from services.inference.service import EngineHolder
from services.rollout.build import check_processor
from services.rollout.errors import ProcessorLoadError
from services.rollout.processors import ProcessorSpec, load_processor
from shared.errors import InvalidInput
from shared.plugins import load_object, parse_classpath
from shared.settings import Settings
from tests.seeds.seed_support import smol_tokenizer, tool_call_reply
from tests.services.rollout.test_processor_jobs import Harness, _harness

WORKSPACE = Path(__file__).parent / "workspace"
CLASSPATH = "functions.rollout.my_rollout.MyRolloutProcessor"


@pytest.fixture
def workspace(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The reference's workspace layout on sys.path (``functions/`` is a top-level package)."""
    monkeypatch.syspath_prepend(str(WORKSPACE))
    return WORKSPACE


def test_the_grammar_reads_both_forms(workspace: Path) -> None:
    assert parse_classpath("a.b:C.D") == ("a.b", "C.D")
    assert parse_classpath("a.b.C") == ("a.b", "C")
    for bad in ("a", "a:", ":C", "a..b", "a.b:C:D", "1a.B"):
        with pytest.raises(InvalidInput):
            parse_classpath(bad)
    dotted = load_object(CLASSPATH, allowed=["functions"])
    assert dotted is load_object("functions.rollout.my_rollout:MyRolloutProcessor")
    with pytest.raises(InvalidInput, match="not in an allowed module"):
        load_object(CLASSPATH, allowed=["tests"])
    assert callable(load_processor(CLASSPATH, allowed_modules=["functions"]).process)


def test_allow_list_still_applies_to_the_dotted_form(workspace: Path) -> None:
    spec = ProcessorSpec(classpath=CLASSPATH)
    check_processor(spec, ["functions.rollout"])
    with pytest.raises(ProcessorLoadError) as err:
        check_processor(spec, ["tests.services"])
    assert err.value.param == "processor.classpath"


@pytest.fixture
async def harness(settings: Settings, engine: AsyncEngine, workspace: Path,
                  monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Harness]:
    tok = smol_tokenizer()
    policy = Engine(scripted_model(tok, tool_call_reply("query_status", '{"item_id": "P100"}')), tok,
                    name="scripted", max_batch_size=4)
    monkeypatch.setattr(inference_service, "_holder", EngineHolder(engine=policy))
    try:
        async with _harness(settings, engine, rollout_processor_modules=["functions"]) as h:
            yield h
    finally:
        policy.close()


async def _run(h: Harness, body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from shared.web.state import get_app_state

    resp = await h.client.post("/v1/rollouts", json=body)
    assert resp.status_code == 202, resp.text
    job_id = resp.json()["id"]
    h.jobs.append(job_id)
    await get_app_state(h.app).dispatcher.drain()  # type: ignore[attr-defined]
    job = (await h.client.get(f"/v1/rollouts/{job_id}")).json()
    items = (await h.client.get(f"/v1/rollouts/{job_id}/trajectories")).json()["items"]
    return job, items


async def test_job_sampling_and_limits_reach_the_dotted_processor(harness: Harness) -> None:
    body = {"tasks": [{"id": "t0", "messages": [{"role": "user", "content": "查询项目 P100 的状态"}],
                       "metadata": {"sample_id": "test-001"}}],
            "group_size": 1, "sampling": {"temperature": 0.2, "max_tokens": 48},
            "limits": {"max_tokens_per_turn": 40, "max_total_tokens": 512, "timeout_s": 90, "tool_timeout_s": 30},
            "processor": {"classpath": CLASSPATH, "timeout_s": 120}}
    job, [item] = await _run(harness, body)
    assert job["status"] == "succeeded", job
    extra = item["metadata"]["processor_metadata"]
    assert extra["sample_id"] == "test-001"  # rollout_extra passes through
    assert extra["seen_sampling"]["temperature"] == 0.2 and extra["seen_sampling"]["max_tokens"] == 40
    assert extra["seen_sampling"]["timeout"] == 90
    assert extra["seen_limits"]["max_tokens_per_turn"] == 40 and extra["seen_limits"]["timeout_s"] == 90
    assert extra["seen_tool_args"] == [{"item_id": "P100"}]
    calls = item["messages"][-1]["tool_calls"]
    assert calls[0]["function"]["name"] == "query_status"
    assert json.loads(calls[0]["function"]["arguments"]) == {"item_id": "P100"}
    assert item["tokens"]["response_ids"]  # token-exact from the gateway's capture


async def test_a_dotted_classpath_outside_the_allow_list_is_refused(settings: Settings, engine: AsyncEngine,
                                                                  workspace: Path) -> None:
    async with _harness(settings, engine, rollout_processor_modules=["tests.services.rollout"]) as h:
        resp = await h.client.post("/v1/rollouts", json={
            "tasks": [{"id": "t0", "messages": [{"role": "user", "content": "x"}]}], "group_size": 1,
            "processor": {"classpath": CLASSPATH}})
    assert resp.status_code == 400 and resp.json()["code"] == "processor_load_failed"
    assert "not in an allowed module" in resp.json()["detail"]


async def test_the_reference_mock_input_runs_the_processor_locally(workspace: Path) -> None:
    from shared.functions import ModelResource, RolloutInput
    from tests.seeds.seed_support import scripted_server

    processor_cls = load_object(CLASSPATH, allowed=["functions"])
    with scripted_server(tool_call_reply("query_status", '{"item_id": "P100"}'), name="student") as url:
        mock_input = RolloutInput(
            model_resource=ModelResource(model_name="student", base_url=f"{url}/v1", api_key="EMPTY"),
            sampling_params={"temperature": 0.2, "max_tokens": 512, "timeout": 60.0},
            messages=[{"role": "user", "content": "查询项目 P100 的状态"}],
            rollout_extra={"sample_id": "test-001"},
        )
        output = await processor_cls().process(mock_input)
    extra = output.agent_output.rollout_extra
    assert output.status == "SUCCESS" and extra["sample_id"] == "test-001"
    assert extra["seen_tool_args"] == [{"item_id": "P100"}]
    assert output.agent_output.messages[-1]["tool_calls"][0]["function"]["name"] == "query_status"
