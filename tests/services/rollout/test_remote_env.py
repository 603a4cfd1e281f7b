"""Rollout jobs against remote OpenEnv servers: the envs service on loopback, and an openenv-core server.

The policy is SCRIPTED in token mode (fixed replies tokenised by the real SmolLM2 tokenizer,
chosen from the decoded prompt); the env servers, the WebSocket sessions, the token bridge,
storage and scoring are real. Token-exactness: every id the policy sampled is stored verbatim
under loss_mask 1, and every prompt it was given is a prefix of the stored ids.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml
from sqlalchemy import select

import services.rollout.tasks  # noqa: F401 - registers rollout.run_shard
from services.app import service_spec
from services.rollout import service
from services.rollout.schemas import RolloutJobCreate
from shared.db.models import TrajectoryRow
from shared.settings import Settings
from shared.web import create_app
from tests.conftest import REPO_ROOT, LoopbackServer, env_metric
from tests.services.rollout.test_service import Live
from tests.services.rollout.token_scripted import TokenScripted, assert_token_exact


@pytest.fixture
async def envs_server(settings: Settings) -> AsyncIterator[str]:
    """The envs service as its own server on loopback (its own database connections)."""
    with LoopbackServer(create_app(service_spec("envs"), settings=settings)) as server:
        yield server.url


@pytest.fixture
async def live(settings: Settings, envs_server: str) -> AsyncIterator[Live]:
    runner = Live(settings.model_copy(update={"rollout_poll_s": 0.05, "envs_url": envs_server}))
    yield runner
    await runner.dispatcher.drain()
    await runner.engine.dispose()


def _example(**changes: Any) -> RolloutJobCreate:
    spec = yaml.safe_load((REPO_ROOT / "examples" / "rollout_tool_routing.yaml").read_text())
    spec.update({"group_size": 2, "policy": {"backend": {"name": "scripted_tokens", "model": "routing"}},
                 "tool_parser": "hermes", **changes})
    return RolloutJobCreate.model_validate(spec)


async def _rows(live: Live, job_id: uuid.UUID) -> list[TrajectoryRow]:
    async with live.maker() as session:
        stmt = select(TrajectoryRow).where(TrajectoryRow.job_id == job_id).order_by(
            TrajectoryRow.task_id, TrajectoryRow.sample_index)
        return list((await session.scalars(stmt)).all())


def _assert_token_exact(row: TrajectoryRow, calls: list[tuple[list[int], list[int]]]) -> None:
    assert_token_exact(row.prompt_ids or [], row.response_ids or [], row.loss_mask or [], turns=row.turns,
                       calls=calls)


async def test_the_example_job_on_the_envs_service_matches_the_embedded_env_token_for_token(
        live: Live, settings: Settings, envs_server: str, token_policies: list[TokenScripted]) -> None:
    before = env_metric(envs_server, "trajforge_env_steps_total", "tool_routing")
    remote = await live.create(_example(env={"base_url": f"{envs_server}/envs/tool_routing"}))
    await live.dispatcher.drain()
    # Embedded: no envs URL, so ``env.name`` reaches the envs app in this process through the same client.
    embedded = Live(settings.model_copy(update={"rollout_poll_s": 0.05, "envs_url": ""}))
    try:
        local = await embedded.create(_example())
        await embedded.dispatcher.drain()
    finally:
        await embedded.engine.dispose()
    async with live.maker() as session:
        assert (await service.read_job(session, remote)).status == "succeeded"
        assert (await service.read_job(session, local)).status == "succeeded"
    remote_rows, local_rows = await _rows(live, remote), await _rows(live, local)
    assert len(remote_rows) == len(local_rows) == 8
    calls = [c for p in token_policies for c in p.calls]
    for r, m in zip(remote_rows, local_rows, strict=True):
        assert r.stop_reason == m.stop_reason and r.stop_reason is not None
        assert r.messages == m.messages and r.tools == m.tools
        assert (r.prompt_ids, r.response_ids, r.loss_mask) == (m.prompt_ids, m.response_ids, m.loss_mask)
        assert r.meta["env_reward"] == m.meta["env_reward"] and r.meta["reward"] == m.meta["reward"]
        _assert_token_exact(r, calls)
    steps = sum(sum(1 for msg in r.messages if msg["role"] == "tool") for r in remote_rows)
    # One metrics registry per process: the loopback server's steps and the embedded app's, each counted.
    assert steps > 0 and env_metric(envs_server, "trajforge_env_steps_total", "tool_routing") - before == 2 * steps


async def test_env_name_with_an_envs_url_runs_on_that_service(settings: Settings,
                                                              token_policies: list[TokenScripted]) -> None:
    # Only the server at the URL hosts ``routing_there``: the job can only succeed by going there.
    there = settings.model_copy(update={"envs_extra": {"routing_there": "services.envs.routing_env:ToolRoutingEnv"}})
    with LoopbackServer(create_app(service_spec("envs"), settings=there)) as server:
        runner = Live(settings.model_copy(update={"rollout_poll_s": 0.05, "envs_url": server.url}))
        try:
            before = env_metric(server.url, "trajforge_env_steps_total", "routing_there")
            job = await runner.create(_example(env={"name": "routing_there"}))
            await runner.dispatcher.drain()
            rows = await _rows(runner, job)
            steps = env_metric(server.url, "trajforge_env_steps_total", "routing_there") - before
            alone = Live(settings.model_copy(update={"rollout_poll_s": 0.05, "envs_url": ""}))
            try:  # embedded, the same name is unknown: the group fails naming it
                missing = await alone.create(_example(env={"name": "routing_there"}))
                await alone.dispatcher.drain()
                async with alone.maker() as session:
                    failed = await service.read_job(session, missing)
            finally:
                await alone.engine.dispose()
        finally:
            await runner.dispatcher.drain()
            await runner.engine.dispose()
    assert len(rows) == 8 and {r.stop_reason for r in rows} == {"stop"}
    assert steps == sum(sum(1 for m in r.messages if m["role"] == "tool") for r in rows) > 0
    assert failed.status == "failed" and failed.done_groups == 0


async def test_a_capability_url_needs_no_header(live: Live, envs_server: str, settings: Settings,
                                                token_policies: list[TokenScripted]) -> None:
    from shared.auth import create_key

    async with live.maker() as session:
        _, key = await create_key(session, "capability", salt=settings.key_salt)
        await session.commit()
    live.settings = live.settings.model_copy(update={"envs_url": ""})  # no bearer header is sent now
    job = await live.create(_example(env={"base_url": f"{envs_server}/envs/tool_routing/k/{key}"}, tasks=_example(
        ).model_dump(mode="json")["tasks"][:1]))
    await live.dispatcher.drain()
    rows = await _rows(live, job)
    assert [r.stop_reason for r in rows] == ["stop", "stop"]
    assert [m["content"] for m in rows[0].messages if m["role"] == "tool"][0] == "A1: shipped"


async def test_an_openenv_core_server_whose_actions_are_not_tool_calls(
        live: Live, reference_server: str, token_policies: list[TokenScripted]) -> None:
    task = {"id": "count", "messages": [{"role": "user", "content": "Move the counter by five."}]}
    body = RolloutJobCreate.model_validate({
        "tasks": [task], "group_size": 2, "mode": "tokens", "tool_parser": "hermes",
        "policy": {"backend": {"name": "scripted_tokens", "model": "counter"}},
        "env": {"base_url": reference_server, "action": {"tool_name": "add", "description": "Add delta."}},
        "limits": {"max_turns": 4, "max_tokens_per_turn": 64, "max_total_tokens": 2048}})
    job = await live.create(body)
    await live.dispatcher.drain()
    rows = await _rows(live, job)
    assert len(rows) == 2
    calls = [c for p in token_policies for c in p.calls]
    for row in rows:
        assert row.stop_reason == "stop" and row.turns == 3
        tool = row.tools[0]["function"]
        assert tool["name"] == "add" and "delta" in tool["parameters"]["properties"]  # the server's action schema
        assert [m["content"] for m in row.messages if m["role"] == "tool"] == ["ok", "ok"]
        assert row.meta["env_reward"] == 5.0 and row.meta["env_steps"] == 2
        _assert_token_exact(row, calls)
