"""A job's policy goes through the gateway: every policy call is one trace of the trajectory's session,
and the trajectory stays token-exact (the same ids, masks and logprobs as the engine called directly).

The engine is the real SmolLM2 on CPU; where a tool call is needed, a SCRIPTED engine (a fixed reply,
tokenised by the real tokenizer and served by the real engine path). The gateway is the real gateway
app in this process (its ASGI app behind the gateway client), its traces in the run's Postgres.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

import services.inference.service as inference_service
from services.app import create_service_app
from services.inference.backends.local import LocalBackend
from services.inference.engine import Engine
from services.inference.scripted import scripted_model
from services.inference.service import EngineHolder, get_engine_holder
from services.rollout.adapters import BackendPolicy, toolcall_parser
from services.rollout.bridge import TokenBridge
from services.rollout.engine import AsyncRolloutEngine
from services.rollout.gateway_policy import GatewayPolicy
from services.rollout.ports import Policy
from shared.auth import create_key
from shared.clients import Endpoint, GatewayClient
from shared.db.session import make_sessionmaker
from shared.schema import SamplingParams, Trajectory
from shared.schema.budgets import RolloutLimits
from shared.settings import Settings
from shared.traces import TraceRecord, merge_session
from tests.services.rollout.job_harness import rollout_app
from tests.services.rollout.support import FunctionTools

SCRIPT = 'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
PROMPT = {"id": "w", "messages": [{"role": "user", "content": "Weather in Paris?"}]}


@pytest.fixture(scope="module")
def scripted_holder(local_holder: EngineHolder) -> Any:
    """A SCRIPTED engine: always the tool call above, served by the real engine path."""
    real = local_holder._engine
    assert real is not None
    engine = Engine(scripted_model(real.tokenizer, SCRIPT), real.tokenizer, name=real.name)
    yield EngineHolder(engine=engine)
    engine.close()


async def _key(engine: AsyncEngine, settings: Settings, name: str) -> tuple[uuid.UUID, str]:
    async with make_sessionmaker(engine)() as db:
        row, key = await create_key(db, name, salt=settings.key_salt)
        await db.commit()
        return row.id, key


@contextlib.asynccontextmanager
async def _gateway(settings: Settings, engine: AsyncEngine, holder: EngineHolder) -> AsyncIterator[GatewayClient]:
    """The gateway app in this process (embedded upstream: ``holder``'s engine), behind the gateway client."""
    app = create_service_app("gateway", settings=settings, engine=engine, sessionmaker=make_sessionmaker(engine))
    app.dependency_overrides[get_engine_holder] = lambda: holder
    _, key = await _key(engine, settings, "gateway-policy-test")
    async with app.router.lifespan_context(app):
        client = GatewayClient(Endpoint("gateway", "http://gateway.internal", app), api_key=key, timeout_s=120)
        async with client:
            yield client


async def _run(policy: Policy, bridge: TokenBridge, tools: Any, *, max_turns: int, max_tokens: int,
               group_size: int = 1) -> list[Trajectory]:
    engine = AsyncRolloutEngine(policy, tools=tools, mode="tokens", bridge=bridge,
                                sampling_params=SamplingParams(temperature=0.0, max_tokens=max_tokens),
                                limits=RolloutLimits(max_turns=max_turns, max_total_tokens=4096),
                                parser=toolcall_parser(), concurrency=4)
    [group] = await engine.collect_batch([PROMPT], group_size=group_size)
    return group.trajectories


def _sessions(prefix: str) -> Any:
    return lambda traj: f"{prefix}-{traj.id}"


async def _same_through_both(settings: Settings, engine: AsyncEngine, holder: EngineHolder, tools: Any, *,
                             max_turns: int, max_tokens: int) -> tuple[Trajectory, Trajectory]:
    real = await holder.get()
    bridge = TokenBridge(real.tokenizer)
    [direct] = await _run(BackendPolicy(LocalBackend(holder), tokenizer=real.tokenizer), bridge, tools,
                          max_turns=max_turns, max_tokens=max_tokens)
    async with _gateway(settings, engine, holder) as client:
        policy = GatewayPolicy(client, model=real.name, session_for=_sessions(uuid.uuid4().hex))
        [via] = await _run(policy, bridge, tools, max_turns=max_turns, max_tokens=max_tokens)
    return direct, via


@pytest.mark.slow  # the real model on CPU: seconds per token on a busy machine
async def test_real_engine_through_the_gateway_gives_the_direct_calls_tokens_and_logprobs(
        settings: Settings, engine: AsyncEngine, local_holder: EngineHolder) -> None:
    real = await local_holder.get()
    bridge = TokenBridge(real.tokenizer)
    [direct] = await _run(BackendPolicy(LocalBackend(local_holder), tokenizer=real.tokenizer), bridge, None,
                          max_turns=1, max_tokens=3)
    async with _gateway(settings, engine, local_holder) as client:
        policy = GatewayPolicy(client, model=real.name, session_for=_sessions(uuid.uuid4().hex))
        [via] = await _run(policy, bridge, None, max_turns=1, max_tokens=3)
        traces = await client.traces(via.metadata["session_id"])
    assert direct.tokens is not None and via.tokens is not None
    assert via.tokens.prompt_ids == direct.tokens.prompt_ids and via.tokens.response_ids == direct.tokens.response_ids
    assert via.tokens.loss_mask == direct.tokens.loss_mask and via.tokens.logprobs == direct.tokens.logprobs
    assert via.messages == direct.messages and via.stop_reason == direct.stop_reason
    assert via.tokens.weight_version == direct.tokens.weight_version == "0"
    [trace] = traces  # one policy call, one trace, with the engine's own ids
    assert trace["endpoint"] == "/v1/completions" and trace["prompt_token_ids"] == via.tokens.prompt_ids
    assert trace["completion_token_ids"] == via.tokens.response_ids and trace["logprobs"] == via.tokens.logprobs


async def test_a_multi_turn_trajectory_is_its_sessions_traces_token_for_token(
        settings: Settings, engine: AsyncEngine, scripted_holder: EngineHolder) -> None:
    tools = FunctionTools(get_weather=lambda city: f"{city}: sunny, 21 C")
    direct, via = await _same_through_both(settings, engine, scripted_holder, tools, max_turns=3,
                                                   max_tokens=64)
    async with _gateway(settings, engine, scripted_holder) as reader:
        traces = await reader.traces(via.metadata["session_id"])
    assert direct.tokens is not None and via.tokens is not None
    assert via.turns == direct.turns == 3 and via.stop_reason == direct.stop_reason == "max_turns"
    assert via.tokens.model_dump() == direct.tokens.model_dump()  # ids, masks, logprobs: as before
    assert [t["sequence"] for t in traces] == [0, 1, 2]  # one trace per policy call, in order
    merged = merge_session(via.metadata["session_id"], [_record(t) for t in traces])
    [segment] = merged.segments
    assert segment.tokens is not None and merged.mismatches == []
    assert segment.tokens.prompt_ids == via.tokens.prompt_ids
    assert segment.tokens.response_ids == via.tokens.response_ids and segment.tokens.loss_mask == via.tokens.loss_mask


def _record(row: dict[str, Any]) -> TraceRecord:
    return TraceRecord.model_validate(row)


# ---------------------------------------------------------------- a whole job, embedded


async def test_a_job_with_the_default_policy_stores_one_trace_per_policy_call(
        settings: Settings, engine: AsyncEngine, scripted_holder: EngineHolder,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The shard's gateway is started for it in this process; its upstream is the process-wide engine.
    monkeypatch.setattr(inference_service, "_holder", scripted_holder)
    body = {"tasks": [{"id": "t0", "messages": PROMPT["messages"]}], "group_size": 2, "mode": "tokens",
            "tools": ["calculator"], "sampling": {"temperature": 0.0, "max_tokens": 64},
            "limits": {"max_turns": 2, "max_total_tokens": 4096, "timeout_s": 120}}
    async with rollout_app(settings, engine) as harness:
        job, items = await harness.run(body)
        assert job["status"] == "succeeded" and job["counts"]["trajectories"] == 2, job
        for item in items:
            session_id = item["metadata"]["session_id"]
            assert session_id == f"rollout-{job['id']}-t0-{item['sample_index']}-0"
            rows = await harness.trace_rows(session_id)
            tokens = item["tokens"]
            assert len(rows) == item["turns"] == 2  # every policy call is a trace of this trajectory's session
            sampled = [t for t, m in zip(tokens["response_ids"], tokens["loss_mask"], strict=True) if m == 1]
            assert sampled == [t for r in rows for t in r.completion_token_ids or []]
            context = tokens["prompt_ids"] + tokens["response_ids"]
            for row in rows:  # each call's prompt is the trajectory's ids so far, its sample what follows
                prompt = row.prompt_token_ids or []
                assert context[:len(prompt)] == prompt
                assert context[len(prompt):len(prompt) + len(row.completion_token_ids or [])] == row.completion_token_ids


def test_session_ids_are_one_path_segment_and_distinct_per_task() -> None:
    """A dataset task id with slashes (``org/set/32``) once made the session URL unroutable."""
    from services.rollout.gateway_link import session_id_for

    a = session_id_for("job", "org/set/32", 0, 0)
    b = session_id_for("job", "org_set_32", 0, 0)
    assert "/" not in a and a != b
    assert session_id_for("job", "plain-id", 1, 0) == "rollout-job-plain-id-1-0"
