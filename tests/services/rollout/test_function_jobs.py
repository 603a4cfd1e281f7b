"""Rollout jobs whose members run on an uploaded rollout function component, scored by reward components.

Real stack: rollout app, its shard's gateway (served on loopback so the component's worker process can
reach it), the functions and reward services in process, Postgres. The policy is the local engine with a
SCRIPTED reply (real tokenizer and engine path), so the expected tool call is known.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

import services.inference.service as inference_service
from services.functions.app import SERVICE as FUNCTIONS
from services.inference.engine import Engine
from services.inference.scripted import scripted_model
from services.inference.service import EngineHolder
from shared.settings import Settings
from shared.web import create_app
from tests.seeds.seed_support import smol_tokenizer, tool_call_reply
from tests.services.functions.conftest import LENGTH, REWARD, ROLLOUT, component, sample_zip, upload_built
from tests.services.rollout.test_processor_jobs import Harness, _harness

TRUTH = {"decision": "tool_call", "tool_calls": [{"name": "query_status", "arguments": {"item_id": "P100"}}]}


@pytest.fixture
async def harness(settings: Settings, engine: AsyncEngine, tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[Harness, httpx.AsyncClient]]:
    tok = smol_tokenizer()
    policy = Engine(scripted_model(tok, tool_call_reply("query_status", '{"item_id": "P100"}')), tok,
                    name="scripted", max_batch_size=4)
    monkeypatch.setattr(inference_service, "_holder", EngineHolder(engine=policy))
    overrides = {"functions_dir": tmp_path / "functions", "functions_scale_interval_s": 0.1}
    app = create_app(FUNCTIONS, engine=engine, settings=settings.model_copy(update=overrides))
    try:
        async with _harness(settings, engine, **overrides) as h, app.router.lifespan_context(app), \
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://functions",
                                  headers=dict(h.client.headers)) as functions:
            yield h, functions
    finally:
        policy.close()


async def test_a_job_runs_on_the_component_and_scores_with_weighted_reward_components(
        harness: tuple[Harness, httpx.AsyncClient]) -> None:
    h, functions = harness
    package_id = (await upload_built(functions, sample_zip()))["package_id"]
    rewards = [{**component(package_id, REWARD, name="tool-reward"), "weight": 1.0},
               {**component(package_id, LENGTH, name="short-reward"), "weight": 0.5}]
    body = {"tasks": [{"id": "t0", "messages": [{"role": "user", "content": "查询项目 P100 的状态"}],
                       "ground_truth": TRUTH, "metadata": {"sample_id": "s-0"}}],
            "group_size": 2, "sampling": {"temperature": 0.0, "max_tokens": 64},
            "function": component(package_id, ROLLOUT, name="my-rollout", capacity=1, max_capacity=2),
            "reward": {"components": [], "functions": rewards}}
    job, items = await h.submit(body)
    assert job["status"] == "succeeded" and job["counts"]["failed"] == 0, (job, [i["metadata"] for i in items])
    assert len(items) == 2
    for item in items:
        extra = item["metadata"]["processor_metadata"]
        assert extra["sample_id"] == "s-0" and extra["tool_args"] == [{"item_id": "P100"}]
        assert item["tokens"]["response_ids"] and item["metadata"]["captured_calls"] == 1  # token-exact capture
        assert item["messages"][-1]["tool_calls"][0]["function"]["name"] == "query_status"
        assert item["reward"] == pytest.approx(1.0 * 1.0 + 0.5 * 1.0), item


async def test_bad_function_components_are_refused_at_submission(harness: tuple[Harness, httpx.AsyncClient]) -> None:
    h, functions = harness
    package_id = (await upload_built(functions, sample_zip()))["package_id"]
    task = [{"id": "t0", "messages": [{"role": "user", "content": "x"}]}]
    missing = await h.client.post("/v1/rollouts", json={
        "tasks": task, "group_size": 1, "function": component(package_id, "functions.rollout.my_rollout.Nope")})
    assert missing.status_code == 422 and "has no processor" in missing.json()["detail"], missing.text
    zero = [{**component(package_id, REWARD, name="a"), "weight": 0.0},
            {**component(package_id, LENGTH, name="b"), "weight": 0.0}]
    resp = await h.client.post("/v1/rollouts", json={
        "tasks": task, "group_size": 1, "function": component(package_id, ROLLOUT),
        "reward": {"components": [], "functions": zero}})
    assert resp.status_code == 422 and "sum to 0" in resp.json()["detail"], resp.text
    dup = [{**component(package_id, REWARD, name="a"), "weight": 1.0}, {**component(package_id, LENGTH, name="a")}]
    resp = await h.client.post("/v1/rollouts", json={
        "tasks": task, "group_size": 1, "function": component(package_id, ROLLOUT),
        "reward": {"components": [], "functions": dup}})
    assert resp.status_code == 422 and "unique" in resp.json()["detail"], resp.text
    both = await h.client.post("/v1/rollouts", json={
        "tasks": task, "group_size": 1, "function": component(package_id, ROLLOUT),
        "processor": {"classpath": "a.b:C"}})
    assert both.status_code == 422 and "not both" in both.json()["detail"]
