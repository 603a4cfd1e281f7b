"""``bench/rollout.py --mode``: the same rollout with its tool calls through the tools service, embedded vs split.

The simulated tool of ``bench/rollout.py`` is registered in the tools service as an HTTP tool
(``POST /v1/tools/register``, its URL the simulated upstream's ``/tool``), and the engine calls it
through the tools service's client (``ToolsServiceExecutor``, batched ``call_batch``), exactly as a
rollout shard does:

- embedded: the tools app in this process (``TRAJFORGE_TOOLS_URL`` empty: in-process ASGI);
- split: ``trajforge serve tools`` in its own process, every call over loopback HTTP.

Printed next to the direct run (the engine calling the upstream itself): makespan over the lower
bound, and CPU per turn of this process; for split also with the tools process's CPU added.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import free_port, headline, wait_up

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["run_modes"]



def _proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of another process (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _engine_via_tools(executor: Any, client: Any, args: Any, capacity: int) -> tuple[float, float, int, int]:
    from bench.rollout import MAX_TURNS, HttpPolicy, _prompts
    from services.rollout import AsyncRolloutEngine, RolloutLimits

    engine = AsyncRolloutEngine(HttpPolicy(client), tools=executor, concurrency=capacity,
                                limits=RolloutLimits(max_turns=MAX_TURNS), schedule=args.schedule)
    cpu0, t0 = time.process_time(), time.perf_counter()
    groups = await engine.collect_batch(_prompts(args.prompts), group_size=args.group)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    trajs = [t for g in groups for t in g.trajectories]
    errors = sum(t.stop_reason not in ("stop", "max_turns") for t in trajs)
    errors += sum(1 for t in trajs for m in t.messages if m.role == "tool" and str(m.content).startswith("Error"))
    return wall, cpu, engine.stats["turns"], errors


async def run_modes(client: Any, port: int, model: Any, args: Any, modes: list[str]) -> list[dict[str, Any]]:
    """One row per mode (``direct`` first): makespan, lower bound, CPU, turns, errors."""
    from bench.rollout import run_engine
    from services.rollout.remote import ToolsServiceExecutor
    from shared.bootstrap import prepare_embedded
    from shared.clients import Endpoints, ToolsClient
    from shared.settings import Settings

    capacity = args.capacities[0]
    chain, cap_bound, _ = model.bounds(args.prompts, args.group, capacity)
    lower = max(chain, cap_bound)
    await client.post("/reset", {"capacity": capacity})
    run = await run_engine(client, args.prompts, args.group, capacity, args.schedule)
    wall, cpu, turns, errors = run.wall, run.cpu, run.stats["turns"], run.errors
    rows = [{"mode": "direct (engine calls the tool)", "wall": wall, "cpu": cpu, "extra_cpu": 0.0, "turns": turns,
             "errors": errors, "lower": lower}]
    home = tempfile.mkdtemp(prefix="bench-rollout-tools-")
    settings = Settings(home=home, auth_enabled=False, log_level="WARNING", tools_sandbox="optional",
                        client_timeout_s=120)
    await asyncio.to_thread(prepare_embedded, settings)  # migrations run their own event loop
    proc = None
    tool = {"name": "work", "description": "Simulated work.", "parameters": {"type": "object"},
            "url": f"http://127.0.0.1:{port}/tool", "timeout_s": 60}
    try:
        for mode in modes:
            config, extra_pid = settings, None
            if mode == "split":
                tools_port = free_port()
                env = {**os.environ, "TRAJFORGE_HOME": home, "TRAJFORGE_AUTH_ENABLED": "false",
                       "TRAJFORGE_LOG_LEVEL": "WARNING", "TRAJFORGE_TOOLS_SANDBOX": "optional",
                       "PYTHONPATH": str(ROOT)}
                proc = subprocess.Popen([sys.executable, "-m", "services.cli", "serve", "tools", "--port",
                                         str(tools_port)], env=env)
                wait_up(f"http://127.0.0.1:{tools_port}/healthz")
                config = settings.model_copy(update={"tools_url": f"http://127.0.0.1:{tools_port}"})
                extra_pid = proc.pid
            async with Endpoints(config) as endpoints, await ToolsClient.open(endpoints) as tools:
                await tools.register(tool)
                executor = await ToolsServiceExecutor.discover(tools, ["work"], timeout_s=60)
                await client.post("/reset", {"capacity": capacity})
                extra0 = _proc_cpu_s(extra_pid) if extra_pid else 0.0
                wall, cpu, turns, errors = await _engine_via_tools(executor, client, args, capacity)
                extra = (_proc_cpu_s(extra_pid) - extra0) if extra_pid else 0.0
            rows.append({"mode": f"{mode} (tools service{', own process' if mode == 'split' else ', in-process'})",
                         "wall": wall, "cpu": cpu, "extra_cpu": extra, "turns": turns, "errors": errors,
                         "lower": lower})
            if proc is not None:
                proc.terminate()
                proc.wait()
                proc = None
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()
    return rows


def report(rows: list[dict[str, Any]], capacity: int) -> None:
    """Print the rows side by side, ratios against the direct run."""
    base = rows[0]
    print(f"tool calls through the tools service (capacity {capacity}; same workload as above):")
    print(f"  {'':42s} {'makespan s':>10s} {'x lower':>8s} {'x direct':>9s} {'cpu/turn ms':>12s} "
          f"{'+service ms':>12s} {'errors':>6s}")
    for r in rows:
        per_turn = r["cpu"] / max(r["turns"], 1) * 1e3
        extra = (r["cpu"] + r["extra_cpu"]) / max(r["turns"], 1) * 1e3
        print(f"  {r['mode']:42s} {r['wall']:10.3f} {r['wall'] / r['lower']:8.3f} {r['wall'] / base['wall']:9.3f} "
              f"{per_turn:12.3f} {extra:12.3f} {r['errors']:6d}")
    base_cpu = base["cpu"] / max(base["turns"], 1) * 1e3
    for r in rows[1:]:
        headline("rollout_split", f"makespan, {r['mode']}", r["wall"], base["wall"], baseline_name=base["mode"],
                 unit="s", higher_is_better=False)
        # CPU of this process plus, split, the tools process's: the "+service ms" column.
        headline("rollout_split", f"CPU per turn +service, {r['mode']}",
                 (r["cpu"] + r["extra_cpu"]) / max(r["turns"], 1) * 1e3, base_cpu, baseline_name=base["mode"],
                 unit="ms", higher_is_better=False)
