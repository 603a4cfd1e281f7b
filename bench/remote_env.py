"""Rollouts on remote services vs in the worker: env steps and tool calls per second and per worker CPU-second.

One run, side by side, the same rollout engine and the same instant policy (it answers every turn
with one ``add`` call at once, so the env path is all that is measured):

- in-process: the counter env built in the worker (``env.name``), stepped on the event loop;
- remote: the same env hosted by the envs router in its own uvicorn process on loopback
  (``env.base_url``), one WebSocket session per trajectory (``services.rollout.remote``);
- envs service by name, embedded: ``env.name`` as a rollout job now runs it without
  ``TRAJFORGE_ENVS_URL``, the envs app in this process through the envs client (OpenEnv over an
  in-process ASGI WebSocket; its CPU is this process's).

Tools the same way: the calculator run in the worker by a ``ToolManager`` (the old in-worker
path), through the tools service's client with the service's app in this process (embedded),
and through the same client over loopback HTTP to ``trajforge serve tools`` (split), batched.

"per worker core" is steps divided by this process's CPU seconds (``time.process_time``), i.e.
what one rollout-worker core sustains; the env server's own CPU is not counted.

    python bench/remote_env.py [--trajectories 64] [--turns 20]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import free_port, headline, wait_up  # noqa: E402
from bench.openenv import _start  # noqa: E402
from services.envs.builtin import register_builtins  # noqa: E402
from services.envs.registry import EnvRegistry  # noqa: E402
from services.rollout import RolloutLimits  # noqa: E402
from services.rollout.adapters import EnvExecutor, toolcall_parser  # noqa: E402
from services.rollout.engine import AsyncRolloutEngine  # noqa: E402
from services.rollout.ports import PolicyOutput  # noqa: E402
from services.rollout.remote import RemoteEnv  # noqa: E402
from services.rollout.schemas import EnvSpec  # noqa: E402
from shared.schema import SamplingParams, Trajectory  # noqa: E402

_CALL = '<tool_call>{"name": "add", "arguments": {"delta": 1}}</tool_call>'


class InstantPolicy:
    """Answers every turn at once with one ``add`` call (message mode)."""

    async def chat(self, messages: list[dict[str, Any]], **_: Any) -> PolicyOutput:
        """One tool call, no latency."""
        return PolicyOutput(text=_CALL, finish_reason="stop")

    async def generate(self, prompt_ids: list[int], **_: Any) -> PolicyOutput:
        """Not used (message mode)."""
        raise NotImplementedError


async def _run(tools: Any, trajectories: int, turns: int) -> tuple[float, float, int]:
    engine = AsyncRolloutEngine(InstantPolicy(), tools=tools, mode="messages", sampling_params=SamplingParams(),
                                limits=RolloutLimits(max_turns=turns + 1, max_total_tokens=None,
                                                     max_tokens_per_turn=None),
                                parser=toolcall_parser("hermes"), concurrency=trajectories)
    prompts = [Trajectory.model_validate({"id": f"p{i}", "messages": [{"role": "user", "content": "count"}]})
               for i in range(trajectories)]
    wall, cpu = time.perf_counter(), time.process_time()
    groups = await asyncio.gather(*(engine.run_group(p, 1) for p in prompts))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    steps = sum(sum(1 for m in g.trajectories[0].messages if m.role == "tool") for g in groups)
    bad = [t.stop_reason for g in groups for t in g.trajectories if t.stop_reason != "max_turns"]
    assert not bad, f"unexpected stop reasons {bad[:3]}"
    return wall, cpu, steps


async def main(trajectories: int, turns: int, home: str) -> None:
    from shared.clients import Endpoints, EnvsClient
    from shared.settings import Settings

    registry = register_builtins(EnvRegistry())
    executors: list[EnvExecutor] = []

    def local(traj: Trajectory) -> EnvExecutor:
        executors.append(EnvExecutor(registry.get("counter"), traj))
        return executors[-1]

    proc, base, _ = _start("ours", max_sessions=4 * trajectories, tuned=True)
    try:
        wait_up(f"{base}/health", within_s=90)
        remote = await RemoteEnv.discover(EnvSpec(base_url=base), {})
        await _run(remote.executor, 4, 2)  # warm-up: imports, first connections
        rows = {}
        for name, source in (("in-process env", local), ("remote env (WS, loopback)", remote.executor)):
            rows[name] = await _run(source, trajectories, turns)
        settings = Settings(home=home, auth_enabled=False, log_level="WARNING", tools_sandbox="optional",
                            envs_max_sessions=4 * trajectories)
        async with Endpoints(settings) as endpoints, await EnvsClient.open(endpoints) as envs:
            by_name = await RemoteEnv.of_service(EnvSpec(name="counter"), envs)
            await _run(by_name.executor, 4, 2)  # warm-up
            rows["env.name, embedded envs app"] = await _run(by_name.executor, trajectories, turns)
    finally:
        proc.terminate()
        proc.wait()
    base_wall, base_cpu, _ = rows["in-process env"]
    print(f"{trajectories} trajectories x {turns} env steps, instant policy, one asyncio worker process")
    print(f"{'':28s} {'steps':>7s} {'wall s':>8s} {'steps/s':>9s} {'worker cpu s':>13s} {'steps/cpu-s':>12s}")
    for name, (wall, cpu, steps) in rows.items():
        print(f"{name:28s} {steps:7d} {wall:8.2f} {steps / wall:9.0f} {cpu:13.2f} {steps / max(cpu, 1e-9):12.0f}")
    for name in ("remote env (WS, loopback)", "env.name, embedded envs app"):
        wall, cpu, _ = rows[name]
        print(f"ratio {name} / in-process: wall {wall / base_wall:.2f}x, worker CPU per step {cpu / base_cpu:.2f}x")
        headline("remote_env", f"{name}, wall", wall, base_wall, baseline_name="in-process env", unit="s",
                 higher_is_better=False)
        headline("remote_env", f"{name}, worker CPU per step", 1e6 * cpu / rows[name][2],
                 1e6 * base_cpu / rows["in-process env"][2], baseline_name="in-process env", unit="us",
                 higher_is_better=False)


_CALC = '<tool_call>{"name": "calculator", "arguments": {"expression": "2+3*4"}}</tool_call>'


class CalcPolicy(InstantPolicy):
    """Answers every turn at once with one calculator call."""

    async def chat(self, messages: list[dict[str, Any]], **_: Any) -> PolicyOutput:
        """One tool call, no latency."""
        return PolicyOutput(text=_CALC, finish_reason="stop")


async def _run_tools(tools: Any, trajectories: int, turns: int) -> tuple[float, float, int]:
    engine = AsyncRolloutEngine(CalcPolicy(), tools=tools, mode="messages", sampling_params=SamplingParams(),
                                limits=RolloutLimits(max_turns=turns + 1), parser=toolcall_parser("hermes"),
                                concurrency=trajectories)
    prompts = [Trajectory.model_validate({"id": f"p{i}", "messages": [{"role": "user", "content": "sum"}]})
               for i in range(trajectories)]
    wall, cpu = time.perf_counter(), time.process_time()
    groups = await asyncio.gather(*(engine.run_group(p, 1) for p in prompts))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    contents = [m.content for g in groups for m in g.trajectories[0].messages if m.role == "tool"]
    assert contents and all(str(c).strip() == "14" for c in contents), contents[:3]
    return wall, cpu, len(contents)


async def tools_main(trajectories: int, turns: int, home: str) -> None:
    import os
    import subprocess

    from services.rollout.adapters import ToolManagerExecutor
    from services.rollout.remote import ToolsServiceExecutor
    from services.tools.calculator import CalculatorTool
    from services.tools.manager import ToolManager
    from shared.clients import Endpoints, ToolsClient
    from shared.settings import Settings

    env = {**os.environ, "TRAJFORGE_HOME": home, "TRAJFORGE_AUTH_ENABLED": "false", "TRAJFORGE_LOG_LEVEL": "WARNING",
           "PYTHONPATH": str(ROOT)}
    settings = Settings(home=home, auth_enabled=False, log_level="WARNING")

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "services.cli", "serve", "tools", "--port", str(port)], env=env)
    rows = {}
    try:
        wait_up(f"http://127.0.0.1:{port}/healthz")
        rows["in the worker (ToolManager)"] = await _run_tools(
            ToolManagerExecutor(ToolManager([CalculatorTool()])), trajectories, turns)
        for name, config in (("tools service, in-process app", settings),
                             ("tools service, loopback HTTP", settings.model_copy(
                                 update={"tools_url": f"http://127.0.0.1:{port}"}))):
            async with Endpoints(config) as endpoints, await ToolsClient.open(endpoints) as client:
                executor = await ToolsServiceExecutor.discover(client, ["calculator"], timeout_s=30)
                await _run_tools(executor, 4, 2)  # warm-up
                rows[name] = await _run_tools(executor, trajectories, turns)
    finally:
        proc.terminate()
        proc.wait()
    base_wall, base_cpu, _ = rows["in the worker (ToolManager)"]
    print(f"{trajectories} trajectories x {turns} calculator calls, instant policy")
    print(f"{'':32s} {'calls':>7s} {'wall s':>8s} {'calls/s':>9s} {'worker cpu s':>13s} {'calls/cpu-s':>12s}")
    for name, (wall, cpu, calls) in rows.items():
        print(f"{name:32s} {calls:7d} {wall:8.2f} {calls / wall:9.0f} {cpu:13.2f} {calls / max(cpu, 1e-9):12.0f}")
    for name in ("tools service, in-process app", "tools service, loopback HTTP"):
        wall, cpu, _ = rows[name]
        print(f"ratio {name} / in the worker: wall {wall / base_wall:.2f}x, worker CPU per call {cpu / base_cpu:.2f}x")
        headline("remote_env", f"{name}, wall", wall, base_wall, baseline_name="in the worker (ToolManager)",
                 unit="s", higher_is_better=False)
        headline("remote_env", f"{name}, worker CPU per call", 1e6 * cpu / rows[name][2],
                 1e6 * base_cpu / rows["in the worker (ToolManager)"][2], baseline_name="in the worker (ToolManager)",
                 unit="us", higher_is_better=False)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trajectories", type=int, default=64)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    import tempfile

    from shared.bootstrap import prepare_embedded
    from shared.settings import Settings

    tools_home = tempfile.mkdtemp(prefix="bench-tools-")
    prepare_embedded(Settings(home=tools_home, auth_enabled=False))  # an embedded SQLite for the in-process apps
    asyncio.run(main(args.trajectories, args.turns, tools_home))
    asyncio.run(tools_main(args.trajectories, args.turns, tools_home))
