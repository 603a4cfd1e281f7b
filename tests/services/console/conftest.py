"""One real trajforge server for the console tests, with real jobs in it.

The all-in-one app (every service plus the console) is served on loopback
against the run's Postgres database. In it: a token-mode rollout job on the
tool-routing env with a SCRIPTED policy (tests/services/console/policies.py,
tokenised by the real SmolLM2 tokenizer, scored by the real reward
components), a job with one 32,000-token trajectory, a cleaning job over real
public rows, and a gateway session (through the gateway's real proxy to the
scripted test upstream) whose reasoning the template strips, so it has a
prefix mismatch. The inference service holds the real SmolLM2 engine, which
detokenizes the token view's ids.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.gateway.testing_upstream import ServerThread, make_upstream_app
from shared.settings import Settings
from tests.conftest import REPO_ROOT, LoopbackServer, shared_data_dir
from tests.services.console import policies
from tests.services.rollout.conftest import local_holder  # noqa: F401 - shared fixture
from tests.services.rollout.test_service import REWARD, TRUTH

SCREENSHOTS = REPO_ROOT / "out" / "test-screenshots" / "console"
LONG_TOKENS = 32_000


@dataclass
class ConsoleStack:
    """The running server, a key, and the ids of what was seeded."""

    url: str
    key: str
    client: httpx.Client
    settings: Settings
    routing_job: str = ""
    long_job: str = ""
    long_trajectory: str = ""
    clean_job: str = ""
    session_id: str = "console-think"
    extra: dict[str, Any] = field(default_factory=dict)

    def wait_job(self, job_id: str, timeout_s: float = 120) -> dict[str, Any]:
        """Poll a rollout job until it is terminal."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            job = self.client.get(f"/v1/rollouts/{job_id}").json()
            if job["status"] in ("succeeded", "failed", "cancelled"):
                return dict(job)
            time.sleep(0.1)
        raise AssertionError(f"rollout job {job_id} did not finish")


def routing_job(*texts: str, delay_s: float = 0.0, group_size: int = 4) -> dict[str, Any]:
    """A token-mode job over the tool-routing env, one task per text."""
    tasks = [{"id": f"task-{i}", "messages": [{"role": "user", "content": t}], "ground_truth": TRUTH}
             for i, t in enumerate(texts)]
    return {"tasks": tasks, "group_size": group_size, "env": {"name": "tool_routing"}, "reward": REWARD,
            "mode": "tokens", "policy": {"backend": {"name": "console_routing", "model": f"delay={delay_s}"}},
            "sampling": {"max_tokens": 64}, "shard_size": 2,
            "limits": {"max_turns": 3, "max_tokens_per_turn": 64, "max_total_tokens": 4096}}


def _long_job() -> dict[str, Any]:
    return {"tasks": [{"id": "long", "messages": [{"role": "user", "content": "Write at length."}], "ground_truth": TRUTH}],
            "group_size": 1, "mode": "tokens", "policy": {"backend": {"name": "console_long"}},
            "sampling": {"max_tokens": LONG_TOKENS},
            "reward": {"components": [{"name": "length", "weight": 1.0}]},
            "limits": {"max_turns": 1, "max_tokens_per_turn": LONG_TOKENS, "max_total_tokens": LONG_TOKENS + 1000}}


async def _new_key(settings: Settings) -> str:
    from shared.auth import create_key
    from shared.db.session import create_engine_for, make_sessionmaker

    engine = create_engine_for(settings)
    try:
        async with make_sessionmaker(engine)() as session:
            _, key = await create_key(session, "console-tests", salt=settings.key_salt)
            await session.commit()
    finally:
        await engine.dispose()
    return key


async def _distilled_copy(settings: Settings, trajectory_id: str) -> str:
    """A copy of a stored trajectory with teacher logprobs beside its own (as a distillation run stores them)."""
    import uuid

    from shared.db.models import TrajectoryRow
    from shared.db.session import create_engine_for, make_sessionmaker

    engine = create_engine_for(settings)
    try:
        async with make_sessionmaker(engine)() as session:
            row = await session.get(TrajectoryRow, uuid.UUID(trajectory_id))
            assert row is not None and row.response_ids
            teacher = [-0.01 * (i % 9) if m else None for i, m in enumerate(row.loss_mask or [])]
            copy = TrajectoryRow(job_id=row.job_id, group_id=None, task_id=row.task_id, sample_index=99,
                                 stop_reason=row.stop_reason, turns=row.turns, messages=row.messages,
                                 tools=row.tools, prompt_ids=row.prompt_ids, response_ids=row.response_ids,
                                 loss_mask=row.loss_mask, logprobs=row.logprobs, teacher_logprobs=teacher,
                                 steps=row.steps, meta=row.meta)
            session.add(copy)
            await session.commit()
            return str(copy.id)
    finally:
        await engine.dispose()


def _clean_rows() -> bytes:
    lines = (shared_data_dir() / "glaive_toolcall_en_llamafactory.jsonl").read_bytes().splitlines()[:40]
    return b"\n".join(lines + lines[:8] + [b"{broken", b'{"id": "no-messages"}']) + b"\n"


def _gateway_session(client: httpx.Client, upstream: ServerThread, session_id: str) -> None:
    """Two calls; the template drops the first reply's reasoning, so the second prompt breaks the prefix."""
    httpx.post(upstream.url + "/_script", json=[{"content": "A", "reasoning": "let me think"},
                                                {"content": "B"}]).raise_for_status()
    base = f"/sessions/{session_id}/v1/chat/completions"
    messages: list[dict[str, Any]] = [{"role": "user", "content": "q"}]
    first = client.post(base, json={"model": "policy", "messages": messages})
    first.raise_for_status()
    messages += [{"role": "assistant", "content": first.json()["choices"][0]["message"]["content"]},
                 {"role": "user", "content": "more"}]
    client.post(base, json={"model": "policy", "messages": messages}).raise_for_status()


def _seed(stack: ConsoleStack, upstream: ServerThread) -> None:
    c = stack.client
    dataset = c.post("/v1/datasets", params={"name": "console-glaive"}, content=_clean_rows())
    dataset.raise_for_status()
    clean = c.post("/v1/clean/jobs", json={"dataset_id": dataset.json()["id"], "batch_size": 20})
    clean.raise_for_status()
    stack.clean_job = clean.json()["id"]
    texts = ["What is the status of item A1?", "Status of A1, please.", "garbage request about A1",
             "A1 status while the upstream is down"]
    stack.routing_job = c.post("/v1/rollouts", json=routing_job(*texts)).json()["id"]
    stack.long_job = c.post("/v1/rollouts", json=_long_job()).json()["id"]
    _gateway_session(c, upstream, stack.session_id)
    for job in (stack.routing_job, stack.long_job):
        assert stack.wait_job(job)["status"] == "succeeded"
    stack.long_trajectory = c.get(f"/v1/rollouts/{stack.long_job}/trajectories").json()["items"][0]["id"]
    first = c.get(f"/v1/rollouts/{stack.routing_job}/trajectories", params={"limit": 1}).json()["items"][0]["id"]
    with ThreadPoolExecutor(1) as pool:
        stack.extra["distilled"] = pool.submit(asyncio.run, _distilled_copy(stack.settings, first)).result()
    deadline = time.monotonic() + 60
    while c.get(f"/v1/clean/jobs/{stack.clean_job}").json()["status"] != "succeeded":
        assert time.monotonic() < deadline, "the cleaning job did not finish"
        time.sleep(0.1)


@pytest.fixture(scope="session")
def console(settings: Settings, smol_tokenizer: Any, local_holder: Any,  # noqa: F811
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleStack]:
    """The all-in-one server with seeded jobs, and an API key for it."""
    from services.app import create_all_in_one_app
    from services.inference import service as inference_service

    policies.install(smol_tokenizer)
    upstream = ServerThread(make_upstream_app("console")).start()
    config = tmp_path_factory.mktemp("console") / "gateway.json"
    config.write_text(json.dumps({"upstreams": [{"model": "policy", "url": upstream.url, "name": "scripted"}]}))
    test_settings = settings.model_copy(update={"gateway_config": str(config), "rollout_poll_s": 0.1})
    saved = inference_service._holder
    inference_service._holder = local_holder  # the real engine, loaded once per test run
    # A thread of its own: pytest-asyncio may have an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        key = pool.submit(asyncio.run, _new_key(test_settings)).result()
    try:
        with LoopbackServer(create_all_in_one_app(test_settings)) as server, \
                httpx.Client(base_url=server.url, headers={"authorization": f"Bearer {key}"}, timeout=60) as client:
            stack = ConsoleStack(url=server.url, key=key, client=client, settings=test_settings)
            _seed(stack, upstream)
            yield stack
    finally:
        inference_service._holder = saved
        upstream.stop()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """Where the browser tests save their screenshots."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
