"""OpenEnv hosting benchmark: ours vs the openenv-core 0.3.0 reference server, same run.

Both servers run under uvicorn in their own process on loopback and host the same
trivial counter env; one asyncio load generator with the ``websockets`` client
drives both identically. Figures: concurrent sessions held (each connected and
reset), and steps/s with several sessions stepping at once.

    python bench/openenv.py [--held 1000] [--sessions 16] [--steps 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import free_port, headline, wait_up  # noqa: E402

PEER_DIR = ROOT / "tests" / "services" / "envs" / "peer"


def _serve_ours(port: int, max_sessions: int, tuned: bool) -> None:
    """Run our router under uvicorn (the bench's own minimal app)."""
    import uvicorn
    from fastapi import FastAPI

    from services.envs import OpenEnvServer, ServerConfig, register_builtins
    from services.envs.registry import EnvRegistry
    from services.envs.routes import build_router

    app = FastAPI()
    server = OpenEnvServer(
        register_builtins(EnvRegistry()), ServerConfig(max_sessions=max_sessions)
    )
    app.include_router(build_router(server))
    # Tuned: the sans-I/O WebSocket protocol and no per-message deflate (frames are tiny JSON).
    extra: dict[str, Any] = (
        {"ws": "websockets-sansio", "ws_per_message_deflate": False} if tuned else {}
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", **extra)


def _start(
    kind: str, max_sessions: int, tuned: bool = False
) -> tuple[subprocess.Popen[bytes], str, str]:
    port = free_port()
    if kind == "ours":
        cmd = [sys.executable, __file__, "--serve-ours", str(port), "--max", str(max_sessions)]
        cmd += ["--tuned"] if tuned else []
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(cmd, env=env)
        return (
            proc,
            f"http://127.0.0.1:{port}/envs/counter",
            f"ws://127.0.0.1:{port}/envs/counter/ws",
        )
    venv = subprocess.run(
        [str(ROOT / "scripts" / "openenv_peer_venv.sh")], capture_output=True, text=True, check=True
    )
    py = Path(venv.stdout.strip().splitlines()[-1]) / "bin" / "python"
    cmd = [
        str(py),
        "-m",
        "uvicorn",
        "toy_env:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    cmd += ["--ws", "websockets-sansio", "--ws-per-message-deflate", "false"] if tuned else []
    # Its stderr is silenced: it logs a traceback for every client that leaves without a close frame.
    proc = subprocess.Popen(
        cmd,
        cwd=PEER_DIR,
        env={"MAX_CONCURRENT_ENVS": str(max_sessions), "PATH": "/usr/bin:/bin"},
        stderr=subprocess.DEVNULL,
    )
    return proc, f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/ws"


async def _ask(ws: ClientConnection, frame: str) -> dict[str, Any]:
    await ws.send(frame)
    return dict(json.loads(await ws.recv()))


async def _open_one(url: str) -> ClientConnection | None:
    try:
        # No per-message deflate from the load generator, for both servers alike: it would spend
        # the shared CPU on compressing tiny frames and hide the servers behind the client.
        ws = await connect(url, open_timeout=60, max_size=None, compression=None)
        reply = await asyncio.wait_for(_ask(ws, '{"type":"reset"}'), 60)
    except Exception:  # noqa: BLE001 - a refused session counts as not held
        return None
    return ws if reply.get("type") == "observation" else None


async def held_sessions(url: str, n: int) -> tuple[int, float]:
    """Open n sessions at once (connect + reset) and keep them; return (held, seconds)."""
    t0 = time.perf_counter()
    sem = asyncio.Semaphore(128)  # bounded connect burst, like a trainer ramping up

    async def one() -> ClientConnection | None:
        async with sem:
            return await _open_one(url)

    conns = await asyncio.gather(*(one() for _ in range(n)))
    elapsed = time.perf_counter() - t0
    live = [c for c in conns if c is not None]
    probe = await asyncio.gather(
        *(_ask(c, '{"type":"step","data":{"delta":1}}') for c in live), return_exceptions=True
    )
    held = sum(1 for p in probe if isinstance(p, dict) and p.get("type") == "observation")
    await asyncio.gather(*(c.close() for c in live), return_exceptions=True)
    return held, elapsed


async def steps_per_s(url: str, sessions: int, steps: int) -> tuple[float, float, float]:
    """Sessions step concurrently, one request in flight each; return (steps/s, p50 ms, p99 ms)."""
    conns = [c for c in await asyncio.gather(*(_open_one(url) for _ in range(sessions))) if c]
    lat: list[float] = []
    frame = '{"type":"step","data":{"delta":1}}'

    async def run(ws: ClientConnection) -> None:
        for _ in range(steps):
            t = time.perf_counter()
            await _ask(ws, frame)
            lat.append(time.perf_counter() - t)

    t0 = time.perf_counter()
    await asyncio.gather(*(run(c) for c in conns))
    elapsed = time.perf_counter() - t0
    await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
    lat.sort()
    return len(lat) / elapsed, 1000 * statistics.median(lat), 1000 * lat[int(0.99 * (len(lat) - 1))]


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _round(proc: subprocess.Popen[bytes], url: str, args: argparse.Namespace) -> dict[str, float]:
    cpu0 = _cpu_s(proc.pid)
    rate, p50, p99 = asyncio.run(steps_per_s(url, args.sessions, args.steps))
    server_us = 1e6 * (_cpu_s(proc.pid) - cpu0) / (args.sessions * args.steps)
    # The load generator shares this small machine, so raw steps/s is partly client-bound;
    # server CPU per step gives the steps/s one server core can sustain.
    return {
        "steps_per_s": rate,
        "server_cpu_us_per_step": server_us,
        "steps_per_s_per_server_core": 1e6 / server_us,
        "p50_ms": p50,
        "p99_ms": p99,
    }


def measure_both(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Run both servers at once; alternate throughput rounds so load drift hits both alike."""
    procs = {kind: _start(kind, args.held + 64, tuned=args.tuned) for kind in ("ours", "reference")}
    try:
        for _, base, _ in procs.values():
            wait_up(f"{base}/health", within_s=90)  # both servers answer 200 once healthy
        best: dict[str, dict[str, float]] = {}
        for _ in range(args.rounds):
            for kind, (proc, _, url) in procs.items():
                got = _round(proc, url, args)
                if kind not in best or got["steps_per_s"] > best[kind]["steps_per_s"]:
                    best[kind] = got
        for kind, (_, _, url) in procs.items():
            held, open_s = asyncio.run(held_sessions(url, args.held))
            best[kind].update(held=held, open_s=open_s)
    finally:
        for proc, _, _ in procs.values():
            proc.terminate()
            proc.wait(timeout=20)
    return best


def report(ours: dict[str, float], ref: dict[str, float], args: argparse.Namespace) -> None:
    """Print the two columns and the ratios."""
    settings = "sans-I/O, no deflate" if args.tuned else "defaults"
    print(
        f"trivial counter env, {args.sessions} sessions x {args.steps} steps, best of {args.rounds}"
    )
    print(
        f"rounds alternating; {args.held} sessions requested; uvicorn WebSocket settings (both): {settings}"
    )
    print(f"{'metric':<30}{'trajforge':>12}{'openenv-core':>14}{'ratio':>9}")
    rows = (
        ("steps_per_s", True),
        ("server_cpu_us_per_step", False),
        ("steps_per_s_per_server_core", True),
        ("p50_ms", False),
    )
    for key, better_high in rows + (("p99_ms", False), ("held", True), ("open_s", False)):
        a, b = ours[key], ref[key]
        ratio = (a / b if better_high else b / a) if a and b else float("nan")
        print(f"{key:<30}{a:>12.1f}{b:>14.1f}{ratio:>8.2f}x")
    print("ratio > 1 means trajforge is better (higher throughput/held, lower latency/time)")
    headline("openenv", "steps_per_s", ours["steps_per_s"], ref["steps_per_s"],
             baseline_name="openenv-core server", unit="steps/s")
    headline("openenv", "server_cpu_us_per_step", ours["server_cpu_us_per_step"], ref["server_cpu_us_per_step"],
             baseline_name="openenv-core server", unit="us", higher_is_better=False)


def main() -> None:
    """Entry point."""
    p = argparse.ArgumentParser()
    p.add_argument("--held", type=int, default=1000)
    p.add_argument("--sessions", type=int, default=16)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--serve-ours", type=int, default=0)
    p.add_argument("--max", type=int, default=2048)
    p.add_argument(
        "--tuned",
        action="store_true",
        help="run both servers with uvicorn's sans-I/O WebSocket protocol and no deflate",
    )
    p.add_argument(
        "--rounds", type=int, default=3, help="throughput rounds per server; the best one counts"
    )
    args = p.parse_args()
    if args.serve_ours:
        _serve_ours(args.serve_ours, args.max, args.tuned)
        return
    got = measure_both(args)
    report(got["ours"], got["reference"], args)


if __name__ == "__main__":
    main()
