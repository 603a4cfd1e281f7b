"""Rollout processors loaded by classpath from a real user package written to disk."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from services.rollout.errors import ProcessorLoadError
from services.rollout.processors import (
    ROLLOUT_ERROR_PREFIX,
    ProcessorRuntime,
    ProcessorSpec,
    RolloutInput,
    load_processor,
)
from shared.errors import RateLimited

USER_CODE = '''
import asyncio
import time

from shared.functions import AgentOutput, RolloutInput, RolloutOutput


class Echo:
    def __init__(self, greeting="hi"):
        self.greeting = greeting

    async def process(self, inp: RolloutInput) -> RolloutOutput:
        if inp.metadata.get("sleep"):
            await asyncio.sleep(inp.metadata["sleep"])
        if inp.metadata.get("raise"):
            raise ValueError("bad input")
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        msgs = inp.messages + [{"role": "assistant", "content": None, "tool_calls": [call, call]},
                               {"role": "tool", "tool_call_id": "c1", "content": "r"},
                               {"role": "assistant", "content": self.greeting}]
        return RolloutOutput(agent_output=AgentOutput(messages=msgs))


class SyncDict:
    def process(self, inp):
        time.sleep(0.01)
        return {"agent_output": {"messages": [{"role": "assistant", "content": inp.id.upper()}]}}


class NoProcess:
    pass
'''


@pytest.fixture
def user_pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    pkg = tmp_path / "userprocs"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mine.py").write_text(textwrap.dedent(USER_CODE))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "userprocs.mine"


def inp(i: str = "a", **meta: object) -> RolloutInput:
    return RolloutInput(id=i, messages=[{"role": "user", "content": "q"}], metadata=dict(meta))


async def test_loaded_processor_runs_with_metrics(user_pkg: str) -> None:
    rt = ProcessorRuntime(ProcessorSpec(classpath=f"{user_pkg}:Echo", init_kwargs={"greeting": "yo"}))
    out = await rt.process(inp())
    assert out.agent_output.response == "yo" and out.status == "SUCCESS" and not out.failed
    metrics = out.agent_output.rollout_metrics
    assert metrics["tool_call_count"] == 2 and metrics["latency_s"] >= 0


async def test_sync_processor_returning_a_dict(user_pkg: str) -> None:
    rt = ProcessorRuntime(ProcessorSpec(classpath=f"{user_pkg}:SyncDict"))
    outs = await rt.process_many([inp("a"), inp("b")])
    assert [o.agent_output.response for o in outs] == ["A", "B"]


async def test_raising_processor_gives_rollout_error(user_pkg: str) -> None:
    rt = ProcessorRuntime(ProcessorSpec(classpath=f"{user_pkg}:Echo"))
    out = await rt.process(inp(**{"raise": True}))
    assert out.agent_output.response == f"{ROLLOUT_ERROR_PREFIX} ValueError: bad input" and out.status == "FAILED"
    assert out.agent_output.messages[:-1] == [{"role": "user", "content": "q"}]
    assert out.error == "ValueError: bad input"


async def test_slow_processor_times_out_into_rollout_error(user_pkg: str) -> None:
    rt = ProcessorRuntime(ProcessorSpec(classpath=f"{user_pkg}:Echo", timeout_s=0.05))
    out = await rt.process(inp(sleep=5))
    assert out.agent_output.response.startswith(f"{ROLLOUT_ERROR_PREFIX} timeout")
    assert out.agent_output.rollout_metrics["latency_s"] < 1


async def test_concurrency_and_capacity_bounds(user_pkg: str) -> None:
    rt = ProcessorRuntime(ProcessorSpec(classpath=f"{user_pkg}:Echo", concurrency=2, capacity=3))
    started = asyncio.get_running_loop().time()
    outs = await rt.process_many([inp(str(i), sleep=0.1) for i in range(4)])
    assert asyncio.get_running_loop().time() - started >= 0.19  # 4 items, 2 at a time
    assert all(o.status == "SUCCESS" for o in outs)
    held = [asyncio.create_task(rt.process(inp(str(i), sleep=0.2))) for i in range(3)]
    await asyncio.sleep(0.01)
    with pytest.raises(RateLimited):
        await rt.process(inp("overflow"))
    await asyncio.gather(*held)


@pytest.mark.parametrize("path", ["nopkg_xyz.mod:Cls", "userprocs.mine:Missing", "userprocs.mine:NoProcess"])
def test_bad_classpaths_are_refused(user_pkg: str, path: str) -> None:
    with pytest.raises(ProcessorLoadError):
        load_processor(path)


def test_spec_refuses_malformed_classpath() -> None:
    with pytest.raises(ValueError):
        ProcessorSpec(classpath="not a path")
