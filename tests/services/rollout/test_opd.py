"""OPD jobs (``/v1/opd/jobs``): bad input refused naming the field, and a real run on CPU.

The run uses the real SmolLM2 engine as student and as teacher (a second gateway
name with its own system prompt), the reference-shaped components of
``tests.services.rollout.opd_functions`` and the ``AgenticRL`` client.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

import services.inference.service as inference_service
from services.inference.service import EngineHolder
from services.rollout.app import SERVICE
from shared.agentic import AgenticRL, TrainingDataset, ValidationDataset
from shared.schema.functions import (
    FunctionComponentModel,
    FunctionComponentRuntime,
    RewardFunctionComponent,
    RolloutFunctionComponent,
)
from shared.settings import Settings
from shared.web.state import get_app_state
from tests.services.rollout.test_processor_jobs import Harness, _harness
from tests.services.rollout.test_teacher import TEACHER, _gateway_config

MODULE = "tests.services.rollout.opd_functions"


def _rollout(**runtime: Any) -> dict[str, Any]:
    return {"type": "rollout", "name": "chat", "timeout": 120,
            "fcmodel": {"classpath": f"{MODULE}.OneTurnChat"}, "runtime": runtime}


def _reward(name: str, classpath: str, weight: float) -> dict[str, Any]:
    return {"type": "reward", "name": name, "weight": weight, "fcmodel": {"classpath": f"{MODULE}.{classpath}"}}


def _body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "job_name": "opd-test", "model": "SmolLM2-135M-Instruct",
        "training_datasets": [{"rows": [{"messages": [{"role": "user", "content": "Capital of France?"}]}]}],
        "functions": [_rollout(), _reward("answer", "MentionsAnswer", 1.0)],
        "hyper_parameters": {"rounds": 1, "group_size": 2, "max_tokens": 4}}
    body.update(changes)
    return body


@pytest.fixture
async def opd_client(make_client: Any, tmp_path: Path) -> httpx.AsyncClient:
    """The rollout app (no model loads: only the gateway's model list is read)."""
    client: httpx.AsyncClient = await make_client(
        SERVICE, rollout_processor_modules=[MODULE], reward_processor_modules=[MODULE],
        gateway_config=_gateway_config(tmp_path, EngineHolder().served_name))
    return client


async def test_bad_input_is_refused_naming_the_field(opd_client: httpx.AsyncClient) -> None:
    student = EngineHolder().served_name
    cases = [
        (_body(model=student, functions=[_rollout(), _reward("chat", "Brevity", 1.0)]), "functions[1].name"),
        (_body(model=student, functions=[{**_rollout(), "fcmodel": {"classpath": f"{MODULE}.Missing"}}]),
         "functions[0].fcmodel.classpath"),
        (_body(model=student, functions=[_rollout(), _reward("a", "MentionsAnswer", 0.0), _reward("b", "Brevity", 0)]),
         "functions"),
        (_body(model=student, functions=[_reward("a", "MentionsAnswer", 1.0)]), "functions"),
        (_body(model=student, functions=[_rollout(), _reward("x", "NoSuchReward", 1.0)]),
         "functions[1].fcmodel.classpath"),
        (_body(model=student, teacher_model="no-such-teacher"), "teacher_model"),
        (_body(model="no-such-student"), "model"),
        (_body(model=student, training_datasets=[{"rows": [{"id": "x"}]}]), "training_datasets[0].rows[0]"),
        (_body(model=student, training_datasets=[{"rows": [{"messages": [{"role": "system", "content": "s"}]}]}]),
         "training_datasets[0].rows[0]"),
        (_body(model=student, validation_datasets=[{"rows": [{"prompt": ""}]}]), "validation_datasets[0].rows[0]"),
        (_body(model=student, functions=[_rollout(concurrency=0)]), "functions.0.rollout.runtime.concurrency"),
        (_body(model=student, functions=[_rollout(min_capacity=3, capacity=3, max_capacity=2)]),
         "functions.0.rollout.runtime.max_capacity"),
        (_body(model=student, hyper_parameters={"group_size": 0}), "hyper_parameters.group_size"),
    ]
    for body, param in cases:
        resp = await opd_client.post("/v1/opd/jobs", json=body)
        assert resp.status_code == 422 and resp.json()["param"] == param, (param, resp.text)


@pytest.fixture
async def opd_harness(settings: Settings, engine: AsyncEngine, local_holder: Any, tmp_path: Path,
                      monkeypatch: pytest.MonkeyPatch) -> Any:
    """The rollout app on committed data, its shards' gateway serving the student and the teacher names."""
    monkeypatch.setattr(inference_service, "_holder", local_holder)
    async with _harness(settings, engine, gateway_config=_gateway_config(tmp_path, local_holder.served_name),
                        reward_processor_modules=[MODULE], rollout_processor_modules=[MODULE]) as h:
        yield h


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.mark.timeout(1500)  # the real model on a shared CPU
async def test_opd_job_stores_teacher_logprobs_rewards_and_distillation_advantages(
        opd_harness: Harness, local_holder: Any, tmp_path: Path) -> None:
    h = opd_harness
    train = _jsonl(tmp_path / "train.jsonl", [
        {"id": "paris", "messages": [{"role": "user", "content": "What is the capital of France?"}],
         "ground_truth": {"answer": "Paris"}},
        {"id": "down", "prompt": "Look up order 7.", "rollout_extra": {"crash": True}}])
    val = _jsonl(tmp_path / "validation.jsonl", [{"id": "v0", "prompt": "Capital of Spain?",
                                                  "ground_truth": {"answer": "Madrid"}}])
    runtime = FunctionComponentRuntime(concurrency=2, capacity=1, max_capacity=2)
    functions = [
        RolloutFunctionComponent(name="chat", timeout=1200, runtime=runtime,
                                 fcmodel=FunctionComponentModel(classpath=f"{MODULE}.OneTurnChat")),
        RewardFunctionComponent(name="answer", weight=1.0, fcmodel=FunctionComponentModel(
            classpath=f"{MODULE}.MentionsAnswer")),
        RewardFunctionComponent(name="brevity", weight=0.5, fcmodel=FunctionComponentModel(
            classpath=f"{MODULE}.Brevity"))]
    client = AgenticRL("http://test", transport=h.client._transport,
                       api_key=h.client.headers["authorization"][7:])
    try:
        result = await client.run(
            job_name="opd-e2e", model=local_holder.served_name, teacher_model=TEACHER,
            training_datasets=[TrainingDataset(file_name=train)], validation_datasets=[ValidationDataset(file_name=val)],
            functions=functions, resources={"charge_type": "mtu_postpaid", "mtu_capacity": 24},
            hyper_parameters={"rounds": 1, "group_size": 2, "max_tokens": 4, "seed": 1, "distill_weight": 0.5,
                              "teacher_system_prompt": "You are a geography teacher.", "learning_rate": 1e-6})
        assert result.status_code == 200 and result.output is not None, result
        await get_app_state(h.app).dispatcher.drain()  # type: ignore[attr-defined]
        job = await client.get(result.output.job_id)
    finally:
        await client.aclose()
    assert job["status"] == "succeeded", job
    assert job["resources"] == {"charge_type": "mtu_postpaid", "mtu_capacity": 24}
    assert job["hyper_parameters"]["learning_rate"] == 1e-6  # recorded for the trainer
    (rnd,) = job["rounds"]
    h.jobs += [rnd["train_job_id"], rnd["validation_job_id"]]
    train_m, val_m = rnd["metrics"]["train"], rnd["metrics"]["validation"]
    assert rnd["status"] == "succeeded" and train_m["trajectories"] == 4 and train_m["failed"] == 2, rnd
    assert train_m["teacher_scored"] == 2 and train_m["reverse_kl_mean"] is not None
    assert set(train_m["reward_components"]) == {"processor:answer", "processor:brevity"}
    assert val_m["trajectories"] == 1 and val_m["scored"] == 1 and val_m["teacher_scored"] == 0
    items = (await h.client.get(f"/v1/rollouts/{rnd['train_job_id']}/trajectories")).json()["items"]
    ok = [i for i in items if i["task_id"] != "down"]
    for item in ok:
        assert item["metadata"]["teacher"]["status"] == "ok" and item["reward"] is not None
        assert len(item["tokens"]["teacher_logprobs"]) == len(item["tokens"]["response_ids"])
    crashed = [i for i in items if i["task_id"] == "down"]
    assert all(i["stop_reason"] == "api_error" and "tool backend unreachable" in i["metadata"]["error"]
               for i in crashed)
    export = await h.client.get(f"/v1/rollouts/{rnd['train_job_id']}/export", params={"format": "parquet"})
    rows = {r["id"]: r for r in pq.read_table(io.BytesIO(export.content)).to_pylist()}
    for item in ok:
        row, tokens = rows[item["id"]], item["tokens"]
        distill = [t - s if m else 0.0 for s, t, m in
                   zip(tokens["logprobs"], tokens["teacher_logprobs"], tokens["loss_mask"], strict=True)]
        assert row["distill_advantages"] == pytest.approx(distill, abs=1e-5)
        adv = item["metadata"]["advantage"] or 0.0
        assert row["advantages"] == pytest.approx(
            [(adv if m else 0.0) + 0.5 * d for d, m in zip(distill, tokens["loss_mask"], strict=True)], abs=1e-5)


@pytest.fixture
async def uploaded_harness(settings: Settings, engine: AsyncEngine, local_holder: Any, tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch) -> Any:
    """The rollout app with no in-process processors: components come only from uploaded packages."""
    monkeypatch.setattr(inference_service, "_holder", local_holder)
    async with _harness(settings, engine, gateway_config=_gateway_config(tmp_path, local_holder.served_name),
                        functions_dir=tmp_path / "functions", reward_processor_modules=[],
                        rollout_processor_modules=[]) as h:
        yield h


@pytest.mark.timeout(1500)  # the real model on a shared CPU, and the package's build
async def test_opd_job_with_uploaded_workspace_stores_teacher_logprobs_rewards_and_advantages(
        uploaded_harness: Harness, local_holder: Any, tmp_path: Path) -> None:
    from shared.clients import Endpoints, FunctionsClient
    from tests.services.functions.conftest import REWARD, ROLLOUT, WORKSPACE

    h = uploaded_harness
    state = get_app_state(h.app)
    # The rollout app's test transport serves only its own routes: upload through the functions client.
    async with Endpoints(state.settings, engine=state.engine, sessionmaker=state.sessionmaker) as endpoints, \
            await FunctionsClient.open(endpoints, api_key=h.client.headers["authorization"][7:]) as fc:
        package = await fc.wait_built((await fc.upload_dir(WORKSPACE)).package_id)
    assert package.status == "ready" and ROLLOUT in package.classpaths and REWARD in package.classpaths, package
    truth = {"tool_calls": [{"name": "get_order", "arguments": {"order_id": "7"}}]}
    train = _jsonl(tmp_path / "train.jsonl", [{"id": "t0", "prompt": "Look up order 7.", "ground_truth": truth}])
    val = _jsonl(tmp_path / "validation.jsonl", [{"id": "v0", "prompt": "Look up order 8.", "ground_truth": truth}])
    runtime = FunctionComponentRuntime(concurrency=2, capacity=1, max_capacity=1)
    functions = [
        RolloutFunctionComponent(name="rollout", timeout=1200, runtime=runtime, fcmodel=FunctionComponentModel(
            package_id=package.package_id, classpath=ROLLOUT)),
        RewardFunctionComponent(name="tools", weight=1.0, runtime=runtime, fcmodel=FunctionComponentModel(
            package_id=package.package_id, classpath=REWARD))]
    client = AgenticRL("http://test", transport=h.client._transport,
                       api_key=h.client.headers["authorization"][7:])
    try:
        result = await client.run(
            job_name="opd-uploaded", model=local_holder.served_name, teacher_model=TEACHER,
            training_datasets=[TrainingDataset(file_name=train)], validation_datasets=[ValidationDataset(file_name=val)],
            functions=functions, hyper_parameters={"rounds": 1, "group_size": 2, "max_tokens": 4, "seed": 1,
                                                   "distill_weight": 0.5})
        assert result.status_code == 200 and result.output is not None, result
        await state.dispatcher.drain()  # type: ignore[attr-defined]
        job = await client.get(result.output.job_id)
    finally:
        await client.aclose()
    assert job["status"] == "succeeded", job
    (rnd,) = job["rounds"]
    h.jobs += [rnd["train_job_id"], rnd["validation_job_id"]]
    train_m, val_m = rnd["metrics"]["train"], rnd["metrics"]["validation"]
    assert train_m["trajectories"] == 2 and train_m["failed"] == 0 and train_m["teacher_scored"] == 2, rnd
    assert val_m["trajectories"] == 1 and val_m["scored"] == 1, rnd
    items = (await h.client.get(f"/v1/rollouts/{rnd['train_job_id']}/trajectories")).json()["items"]
    export = await h.client.get(f"/v1/rollouts/{rnd['train_job_id']}/export", params={"format": "parquet"})
    rows = {r["id"]: r for r in pq.read_table(io.BytesIO(export.content)).to_pylist()}
    assert len(items) == 2
    for item in items:
        tokens = item["tokens"]
        assert item["metadata"]["teacher"]["status"] == "ok" and item["reward"] is not None
        assert len(tokens["teacher_logprobs"]) == len(tokens["response_ids"])
        distill = [t - s if m else 0.0 for s, t, m in
                   zip(tokens["logprobs"], tokens["teacher_logprobs"], tokens["loss_mask"], strict=True)]
        assert rows[item["id"]]["distill_advantages"] == pytest.approx(distill, abs=1e-5)
