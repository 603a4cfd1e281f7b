"""Rollout jobs run by user processors through the gateway (real SmolLM2 engine, real ``openai`` client).

The shard, its in-process gateway and the trace sink work concurrently, so these
tests use the pooled test engine and commit; each test deletes what it wrote.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncEngine

import services.inference.service as inference_service
from services.app import create_service_app
from services.inference.service import get_engine_holder
from services.rollout.app import SERVICE
from shared.auth import create_key
from shared.db.models import ApiKeyRow, GatewayTraceRow, RolloutJobRow, TaskExecutionRow
from shared.db.session import make_sessionmaker
from shared.settings import Settings
from shared.web import create_app
from shared.web.state import get_app_state
from tests.conftest import LoopbackServer

MODULE = "tests.services.rollout.user_processors"
QUESTION = "What is the capital of France?"


class Harness:
    """The rollout app on committed data, plus cleanup of every job it ran."""

    def __init__(self, app: Any, client: httpx.AsyncClient, engine: AsyncEngine) -> None:
        self.app, self.client, self.maker = app, client, make_sessionmaker(engine)
        self.jobs: list[str] = []

    async def run(self, processor: dict[str, Any], group_size: int = 2) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Submit a one-task job on ``processor``, wait for it, return the job and its trajectories."""
        return await self.submit({"tasks": [{"id": "t0", "messages": [{"role": "user", "content": QUESTION}]}],
                                  "group_size": group_size, "processor": processor})

    async def submit(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Submit a job body, wait for it, return the job and its trajectories."""
        resp = await self.client.post("/v1/rollouts", json=body)
        assert resp.status_code == 202, resp.text
        job_id = resp.json()["id"]
        self.jobs.append(job_id)
        await get_app_state(self.app).dispatcher.drain()  # type: ignore[attr-defined]
        job = (await self.client.get(f"/v1/rollouts/{job_id}")).json()
        items = (await self.client.get(f"/v1/rollouts/{job_id}/trajectories")).json()["items"]
        return job, items

    async def completions(self, session_id: str) -> list[list[int]]:
        """The sampled ids of each call the gateway stored for a session, in order."""
        async with self.maker() as db:
            rows = (await db.execute(select(GatewayTraceRow).where(GatewayTraceRow.session_id == session_id)
                                     .order_by(GatewayTraceRow.seq))).scalars().all()
        return [list(r.completion_token_ids or []) for r in rows]

    async def cleanup(self, key_id: uuid.UUID) -> None:
        """Delete the jobs (groups, trajectories, rewards cascade), their traces, task records and keys."""
        async with self.maker() as db:
            for job_id in self.jobs:
                await db.execute(delete(GatewayTraceRow).where(GatewayTraceRow.session_id.like(f"rollout-{job_id}-%")))
                await db.execute(delete(RolloutJobRow).where(RolloutJobRow.id == uuid.UUID(job_id)))
                await db.execute(delete(ApiKeyRow).where(ApiKeyRow.name == f"rollout-shard-{job_id}"))
                await db.execute(delete(TaskExecutionRow).where(TaskExecutionRow.key.contains(job_id)))
            await db.execute(delete(ApiKeyRow).where(ApiKeyRow.id == key_id))
            await db.commit()


@contextlib.asynccontextmanager
async def _harness(settings: Settings, engine: AsyncEngine, **overrides: Any) -> AsyncIterator[Harness]:
    app = create_app(SERVICE, engine=engine, settings=settings.model_copy(
        update={"rollout_processor_modules": [MODULE], **overrides}))
    maker = make_sessionmaker(engine)
    async with maker() as db:
        row, key = await create_key(db, "processor-jobs-test", salt=settings.key_salt)
        await db.commit()
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test",
                                     headers={"authorization": f"Bearer {key}"}) as client:
            h = Harness(app, client, engine)
            try:
                yield h
            finally:
                await h.cleanup(row.id)


@pytest.fixture
async def harness(settings: Settings, engine: AsyncEngine, local_holder: Any,
                  monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Harness]:
    """The rollout app; its shards reach an in-process gateway (no ``public_base_url``)."""
    # The shard's in-process gateway reaches the process-wide engine: make it the loaded test engine.
    monkeypatch.setattr(inference_service, "_holder", local_holder)
    async with _harness(settings, engine) as h:
        yield h


async def test_openai_processor_through_the_gateway_is_stored_token_exact(harness: Harness,
                                                                         smol_tokenizer: Any) -> None:
    job, items = await harness.run({"classpath": f"{MODULE}:TwoTurnChat", "init_kwargs": {"max_tokens": 6},
                                    "concurrency": 2, "timeout_s": 120})
    assert job["status"] == "succeeded" and job["counts"]["trajectories"] == 2 and job["counts"]["failed"] == 0, [
        (i.get("stop_reason"), i.get("metadata", {}).get("error")) for i in items]
    assert [i["sample_index"] for i in items] == [0, 1]
    for item in items:
        meta, tokens = item["metadata"], item["tokens"]
        assert meta["session_id"] == f"rollout-{job['id']}-t0-{item['sample_index']}-0"
        assert meta["policy_calls"] == 2 and meta["segments"] == 1 and meta["prefix_mismatches"] == 0
        assert meta["rollout_metrics"]["latency_s"] > 0 and meta["rollout_metrics"]["tool_call_count"] == 0
        assert item["turns"] == 2 and [m["role"] for m in item["messages"]] == ["user", "assistant", "user", "assistant"]
        # The ids decode to the conversation as the chat template renders it, up to the last sampled token.
        rendered = smol_tokenizer.apply_chat_template(item["messages"], tokenize=False)
        decoded = smol_tokenizer.decode(tokens["prompt_ids"] + tokens["response_ids"], skip_special_tokens=False)
        assert rendered.startswith(decoded) and rendered[len(decoded):] in ("<|im_end|>\n", "\n")
        # The loss mask covers exactly the tokens the engine sampled, in order, each with its logprob.
        sampled = await harness.completions(meta["session_id"])
        masked = [t for t, m in zip(tokens["response_ids"], tokens["loss_mask"], strict=True) if m == 1]
        assert len(sampled) == 2 and masked == sampled[0] + sampled[1]
        assert tokens["response_ids"][: len(sampled[0])] == sampled[0]
        assert tokens["response_ids"][-len(sampled[1]):] == sampled[1]
        assert all((lp is not None) == (m == 1) for lp, m in zip(tokens["logprobs"], tokens["loss_mask"], strict=True))


async def test_processor_reaches_the_gateway_at_public_base_url(settings: Settings, engine: AsyncEngine,
                                                                local_holder: Any) -> None:
    gateway = create_service_app("gateway", settings=settings)  # with the local engine, as served
    gateway.dependency_overrides[get_engine_holder] = lambda: local_holder
    with LoopbackServer(gateway) as server:
        async with _harness(settings, engine, public_base_url=server.url) as h:
            job, items = await h.run({"classpath": f"{MODULE}:TwoTurnChat", "init_kwargs": {"max_tokens": 3}},
                                     group_size=1)
            (item,) = items
            sampled = await h.completions(item["metadata"]["session_id"])
    assert job["status"] == "succeeded" and item["metadata"]["segments"] == 1 and len(sampled) == 2
    masked = [t for t, m in zip(item["tokens"]["response_ids"], item["tokens"]["loss_mask"], strict=True) if m]
    assert masked == sampled[0] + sampled[1]


async def test_edited_history_keeps_the_first_segment_and_records_the_mismatch(harness: Harness) -> None:
    job, items = await harness.run({"classpath": f"{MODULE}:EditsHistory", "init_kwargs": {"max_tokens": 4}},
                                   group_size=1)
    assert job["status"] == "succeeded"
    (item,) = items
    meta, tokens = item["metadata"], item["tokens"]
    assert meta["policy_calls"] == 2 and meta["segments"] == 2
    assert meta["prefix_mismatches"] == 1 and meta["mismatch_causes"] == {"other": 1}
    first, _ = await harness.completions(meta["session_id"])
    # Only the first call's tokens are stored: its prompt, then exactly its sampled ids.
    assert tokens["response_ids"] == first and tokens["loss_mask"] == [1] * len(first)
    assert item["turns"] == 1 and [m["role"] for m in item["messages"]] == ["user", "assistant"]


async def test_failing_and_hanging_processors_become_rollout_errors(harness: Harness) -> None:
    for name, timeout_s, reason in (("Explodes", 30, "RuntimeError: tool backend unreachable"),
                                    ("Hangs", 0.3, "timeout")):
        job, items = await harness.run({"classpath": f"{MODULE}:{name}", "timeout_s": timeout_s})
        assert job["status"] == "succeeded", job  # failed members never fail the group or the job
        assert job["counts"] == {"stop_reason:api_error": 2, "trajectories": 2, "failed": 2}
        for item in items:
            meta = item["metadata"]
            assert item["stop_reason"] == "api_error" and item.get("tokens") is None
            assert meta["error_code"] == "rollout_error" and meta["error"] == reason
            assert meta["response"] == f"ROLLOUT_ERROR: {reason}" and meta["policy_calls"] == 0
            assert item["messages"] == [{"role": "user", "content": QUESTION},
                                        {"role": "assistant", "content": f"ROLLOUT_ERROR: {reason}"}]


@pytest.mark.parametrize(("classpath", "modules", "needle"), [
    (f"{MODULE}:TwoTurnChat", [], "not in an allowed module"),
    ("os:system", [MODULE], "not in an allowed module"),
    (f"{MODULE}_evil:TwoTurnChat", [MODULE], "not in an allowed module"),
    (f"{MODULE}:Missing", [MODULE], "cannot load"),
])
async def test_processor_outside_allowed_modules_is_refused(make_client: Any, classpath: str, modules: list[str],
                                                            needle: str) -> None:
    client = await make_client(SERVICE, rollout_processor_modules=modules)
    body = {"tasks": [{"id": "t0", "messages": [{"role": "user", "content": QUESTION}]}], "group_size": 1,
            "processor": {"classpath": classpath}}
    resp = await client.post("/v1/rollouts", json=body)
    assert resp.status_code == 400 and needle in resp.text, resp.text
    assert resp.json()["code"] == "processor_load_failed"
    for extra, reason in (({"tools": ["calculator"]}, "brings its own tools"),
                          ({"oversample": 1}, "no oversample"),
                          ({"relaunch": 0.125}, "or relaunch"),
                          ({"policy": {"backend": {"name": "local"}}}, "policy.model at most")):
        mixed = await client.post("/v1/rollouts", json={**body, **extra})
        assert mixed.status_code == 422 and reason in mixed.text, mixed.text
