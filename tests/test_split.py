"""``trajforge up --split``: every service its own process on loopback, wired by the URL table.

A rollout job goes to the rollout process; its env is the envs process (``env.base_url``), reached
over a real WebSocket; the policy is the real local engine (SmolLM2 on CPU, a tiny budget). The
envs process's own metrics count the sessions the rollout process opened.

Then the shipped example (``trajforge rollout examples/rollout_tool_routing.yaml``, pointed at the
envs process) and a job on an openenv-core server run with a SCRIPTED policy (the real model is
too small to emit known tool calls): an OpenAI completions upstream in this process, added to the
gateway process's upstreams, so every policy call still crosses the gateway and is a trace.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker
from typer.testing import CliRunner

from services.cli import app as cli
from shared.auth import create_key
from shared.db.session import create_engine_for
from shared.settings import Settings
from shared.topology import url_table
from tests.conftest import REPO_ROOT, LoopbackServer, env_metric, load_smol_tokenizer
from tests.services.rollout.token_scripted import TokenScripted, assert_token_exact, scripted_upstream

# Seven service processes and the local model loading in two of them (rollout and inference).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _base_port() -> int:
    from shared.topology import PORT_OFFSETS

    # Below the ephemeral range, so no outgoing connection takes one of them meanwhile.
    for _ in range(200):
        base = random.randrange(20000, 30000)
        if all(_free(base + i) for i in PORT_OFFSETS.values()):
            return base
    raise RuntimeError("no free block of ports for every service")


def _free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def service_key(pg_url: str) -> str:
    """The key the stack's services present to each other (the gateway to the inference process)."""
    async def create() -> str:
        engine = create_engine_for(Settings(env="test", database_url=pg_url))
        try:
            async with async_sessionmaker(engine)() as session:
                _, key = await create_key(session, "split-services", salt=Settings().key_salt)
                await session.commit()
                return key
        finally:
            await engine.dispose()

    return asyncio.run(create())


@pytest.fixture(scope="module")
def split_stack(pg_url: str, service_key: str, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[dict[str, str]]:
    """``trajforge up --split`` on the run's Postgres database (no Redis: work runs in each process)."""
    base = _base_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAJFORGE_")}
    env |= {"TRAJFORGE_SERVICE_KEY": service_key, "TRAJFORGE_HOME": str(tmp_path_factory.mktemp("split")), "TRAJFORGE_DATABASE_URL": pg_url,
            "TRAJFORGE_ENV": "test", "TRAJFORGE_LOG_LEVEL": "WARNING", "PYTHONPATH": str(REPO_ROOT),
            "TRAJFORGE_MODEL_CACHE_DIR": str(Settings().model_cache_path)}
    proc = subprocess.Popen([sys.executable, "-m", "services.cli", "up", "--split", "--base-port", str(base)],
                            cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE, text=True)
    table = url_table("loopback", base_port=base)
    try:
        deadline = time.monotonic() + 180
        while not _all_up(table):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the split stack did not come up"
            time.sleep(0.5)
        yield table
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for url in table.values():  # every child went with the parent
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"{url}/healthz", timeout=1)


def _all_up(table: dict[str, str]) -> bool:
    try:
        return all(httpx.get(f"{u}/healthz", timeout=1).status_code == 200 for u in table.values())
    except httpx.HTTPError:
        return False


@pytest.fixture
async def split_key(engine: AsyncEngine, settings: Settings) -> str:
    async with async_sessionmaker(engine)() as session:
        _, key = await create_key(session, "split-test", salt=settings.key_salt, scope="admin")
        await session.commit()
    return key


def test_each_service_is_its_own_process_and_a_job_crosses_them(split_stack: dict[str, str],
                                                                 split_key: str) -> None:
    table, auth = split_stack, {"authorization": f"Bearer {split_key}"}
    services = {n: httpx.get(f"{u}/healthz", timeout=5).json()["services"] for n, u in table.items()}
    assert services == {n: [n] for n in table}  # one service per process
    upstreams = httpx.get(f"{table['gateway']}/v1/gateway/upstreams", headers=auth, timeout=10).json()
    assert [u["url"] for u in upstreams] == [table["inference"]]  # the gateway's upstream is the inference process
    body: dict[str, Any] = {
        "tasks": [{"id": "c", "messages": [{"role": "user", "content": "Add 2 to the counter."}]}],
        "group_size": 2, "mode": "tokens", "env": {"base_url": f"{table['envs']}/envs/counter"},
        "sampling": {"temperature": 0.0, "max_tokens": 8},
        "limits": {"max_turns": 1, "max_tokens_per_turn": 8, "max_total_tokens": 4096, "timeout_s": 240}}
    job = httpx.post(f"{table['rollout']}/v1/rollouts", json=body, headers=auth, timeout=30)
    assert job.status_code == 202, job.text
    job_id, deadline = job.json()["id"], time.monotonic() + 280
    while (state := httpx.get(f"{table['rollout']}/v1/rollouts/{job_id}", headers=auth, timeout=10).json())[
            "status"] in ("pending", "running"):
        assert time.monotonic() < deadline, state
        time.sleep(1)
    assert state["status"] == "succeeded" and state["counts"]["trajectories"] == 2, state
    items = httpx.get(f"{table['rollout']}/v1/rollouts/{job_id}/trajectories", headers=auth, timeout=10).json()
    for item in items["items"]:
        assert item["stop_reason"] in ("stop", "max_turns", "length")
        tokens = item["tokens"]
        assert tokens["response_ids"] and len(tokens["loss_mask"]) == len(tokens["response_ids"])
        assert [t["function"]["name"] for t in item["tools"]] == ["add", "echo"]  # the envs process's /schema
    assert env_metric(table["envs"], "trajforge_env_resets_total", "counter") == 2  # one session per trajectory, in the envs process


@contextmanager
def _scripted_gateway_upstream(table: dict[str, str], auth: dict[str, str], service_key: str
                               ) -> Iterator[dict[str, TokenScripted]]:
    """The scripted models beside the gateway's own upstreams for the block (its upstreams restored after)."""
    app, policies = scripted_upstream(load_smol_tokenizer())
    url = f"{table['gateway']}/v1/gateway/upstreams"
    before = httpx.get(url, headers=auth, timeout=10).json()
    for upstream in before:  # the listing never shows the secret: the one set is the stack's service key
        upstream["api_key"] = service_key if upstream.pop("api_key_set") else None
    with LoopbackServer(app) as server:
        scripted = [{"model": name, "url": server.url, "timeout_s": 60} for name in policies]
        assert httpx.put(url, json=[*before, *scripted], headers=auth, timeout=10).status_code == 200
        try:
            yield policies
        finally:
            httpx.put(url, json=before, headers=auth, timeout=10).raise_for_status()


def _wait(table: dict[str, str], auth: dict[str, str], job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while (state := httpx.get(f"{table['rollout']}/v1/rollouts/{job_id}", headers=auth, timeout=10).json())[
            "status"] in ("pending", "running"):
        assert time.monotonic() < deadline, state
        time.sleep(0.5)
    return state


def _traced_calls(table: dict[str, str], auth: dict[str, str], items: list[dict[str, Any]]
                  ) -> list[tuple[list[int], list[int]]]:
    """Every policy call of the trajectories as the gateway process traced it (prompt ids, sampled ids)."""
    calls = []
    for item in items:
        session = item["metadata"]["session_id"]
        traces = httpx.get(f"{table['gateway']}/v1/sessions/{session}/traces", headers=auth, timeout=10).json()
        assert len(traces) == item["turns"] and {t["status"] for t in traces} == {"ok"}
        calls += [(t["prompt_token_ids"], t["completion_token_ids"]) for t in traces]
    return calls


def _check_token_exact(items: list[dict[str, Any]], calls: list[tuple[list[int], list[int]]]) -> None:
    tok = load_smol_tokenizer()
    for item in items:
        tokens = item["tokens"]
        assert item["stop_reason"] is not None and len(tokens["loss_mask"]) == len(tokens["response_ids"])
        assert_token_exact(tokens["prompt_ids"], tokens["response_ids"], tokens["loss_mask"], turns=item["turns"],
                           calls=calls)
        text = tok.decode(tokens["prompt_ids"] + tokens["response_ids"], skip_special_tokens=False)
        for message in item["messages"]:  # every observation the env returned is in the trained token stream
            if message["role"] == "tool":
                assert message["content"] in text


def test_the_shipped_example_runs_on_the_envs_process_through_the_cli(
        split_stack: dict[str, str], split_key: str, service_key: str, tmp_path: Path) -> None:
    table, auth = split_stack, {"authorization": f"Bearer {split_key}"}
    spec = yaml.safe_load((REPO_ROOT / "examples" / "rollout_tool_routing.yaml").read_text())
    spec.update(group_size=2, tasks=spec["tasks"][:2], policy={"model": "routing"}, tool_parser="hermes",
                env={"base_url": f"{table['envs']}/envs/tool_routing", "kwargs": spec["env"]["kwargs"]})
    path, out = tmp_path / "routing.yaml", tmp_path / "routing.jsonl"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    before = env_metric(table["envs"], "trajforge_env_steps_total", "tool_routing")
    with _scripted_gateway_upstream(table, auth, service_key) as policies:
        result = CliRunner().invoke(cli, ["rollout", str(path), "--url", table["rollout"], "--api-key", split_key,
                                          "--jsonl", str(out)])
    assert result.exit_code == 0, result.output
    items = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(items) == 4 and {i["stop_reason"] for i in items} == {"stop"}
    assert {i["task_id"] for i in items} == {"status-a1", "delete-b2-unconfirmed"}
    assert [t["function"]["name"] for t in items[0]["tools"]][:2] == ["query_status", "delete_item"]
    calls = _traced_calls(table, auth, items)
    assert sorted(map(str, calls)) == sorted(map(str, policies["routing"].calls))  # each call crossed the gateway
    _check_token_exact(items, calls)
    steps = sum(1 for i in items for m in i["messages"] if m["role"] == "tool")
    assert steps == 8 and env_metric(table["envs"], "trajforge_env_steps_total", "tool_routing") - before == steps
    assert all(i["reward"] is not None for i in items)  # scored by the reward process


def test_a_job_on_an_openenv_core_server_whose_actions_are_not_tool_calls(
        split_stack: dict[str, str], split_key: str, service_key: str, reference_server: str) -> None:
    table, auth = split_stack, {"authorization": f"Bearer {split_key}"}
    truth = {"decision": "tool_call", "tool_calls": [{"name": "add", "arguments": {"delta": 2}}]}
    body = {"tasks": [{"id": "count", "messages": [{"role": "user", "content": "Move the counter by five."}],
                       "ground_truth": truth}],
            "group_size": 2, "mode": "tokens", "tool_parser": "hermes", "policy": {"model": "counter"},
            "env": {"base_url": reference_server, "action": {"tool_name": "add", "description": "Add delta."}},
            "limits": {"max_turns": 4, "max_tokens_per_turn": 32, "max_total_tokens": 2048, "timeout_s": 60}}
    with _scripted_gateway_upstream(table, auth, service_key) as policies:
        job = httpx.post(f"{table['rollout']}/v1/rollouts", json=body, headers=auth, timeout=30)
        assert job.status_code == 202, job.text
        state = _wait(table, auth, job.json()["id"])
    assert state["status"] == "succeeded" and state["counts"]["trajectories"] == 2, state
    items = httpx.get(f"{table['rollout']}/v1/rollouts/{state['id']}/trajectories", headers=auth,
                      timeout=10).json()["items"]
    calls = _traced_calls(table, auth, items)
    assert sorted(map(str, calls)) == sorted(map(str, policies["counter"].calls))
    _check_token_exact(items, calls)
    for item in items:
        assert item["stop_reason"] == "stop" and item["turns"] == 3
        tool = item["tools"][0]["function"]
        assert tool["name"] == "add" and "delta" in tool["parameters"]["properties"]  # the server's action schema
        assert [m["content"] for m in item["messages"] if m["role"] == "tool"] == ["ok", "ok"]
        assert item["metadata"]["env_reward"] == 5.0 and item["metadata"]["env_steps"] == 2
    _rescore_through_the_reward_process(table, auth, state["id"], expected=2)


def _rescore_through_the_reward_process(table: dict[str, str], auth: dict[str, str], job_id: str, *,
                                        expected: int) -> None:
    """The reward process re-scores a stored job, reading its trajectories from the rollout process's API."""
    started = httpx.post(f"{table['reward']}/v1/rollouts/{job_id}/rescore", headers=auth, timeout=30,
                         json={"spec": {"components": [{"name": "tool_call"}]}})
    assert started.status_code == 202, started.text
    assert started.json()["total"] == expected
    deadline = time.monotonic() + 60
    while not (progress := httpx.get(f"{table['reward']}{started.json()['status_url']}", headers=auth,
                                     timeout=10).json())["done"]:
        assert time.monotonic() < deadline, progress
        time.sleep(0.3)
    assert (progress["total"], progress["scored"], progress["failed"]) == (expected, expected, 0), progress
