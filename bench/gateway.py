"""Gateway overhead: latency added and requests/s, next to the upstream called directly.

Starts three servers as separate processes on loopback (the fake OpenAI-shaped
upstream, our gateway with trace capture into the in-memory sink, and, when
its virtualenv exists, LiteLLM's proxy pointed at the same upstream), then
drives each with a minimal keep-alive HTTP/1.1 load generator at several
concurrency levels and prints p50/p99 latency, the latency added over the
direct call, requests/s, and our ratio to LiteLLM.

    python bench/gateway.py [--seconds 2] [--rounds 3] [--concurrency 1,16,64,256] [--no-litellm]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LITELLM_BIN = REPO / ".cache" / "litellm-venv" / "bin" / "litellm"
# One key for every target: LiteLLM refuses to start without a master key; ours ignores it here.
BENCH_KEY = "sk-bench-" + secrets.token_hex(16)
BODY = b'{"model":"policy","messages":[{"role":"user","content":"hello there"}],"max_tokens":8}'


@dataclass
class Result:
    """Latencies (ms), throughput and server CPU per request of one target at one concurrency."""

    p50_ms: float
    p99_ms: float
    rps: float
    errors: int
    cpu_ms: float = 0.0


def _tree(pid: int) -> list[int]:
    out = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in task.read_text().split():
            out += _tree(int(child))
    return out


def cpu_s(pid: int | None) -> float:
    """User + system CPU seconds of a process and its children (0 when unknown)."""
    if pid is None:
        return 0.0
    total = 0
    for p in _tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_upstream(port: int) -> None:
    """Child process: the fake upstream, without its request log."""
    import uvicorn

    from services.gateway.testing_upstream import make_upstream_app

    app = make_upstream_app("bench", log_requests=False)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def serve_gateway(port: int, upstream: str) -> None:
    """Child process: the gateway router on a bare app, traces to the in-memory sink."""
    import uvicorn
    from fastapi import FastAPI

    from services.gateway.config import GatewayConfig, UpstreamSpec
    from services.gateway.routes import router
    from services.gateway.service import build_gateway

    app = FastAPI()
    app.include_router(router)
    app.state.gateway = build_gateway(GatewayConfig(upstreams=[UpstreamSpec(model="policy", url=upstream)]))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def spawn(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start a child process quietly."""
    return subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_ready(port: int, path: str, timeout_s: float = 120.0, proc: subprocess.Popen[bytes] | None = None) -> bool:
    """Poll until ``GET path`` answers (any status), the process exits, or the timeout passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and (proc is None or proc.poll() is None):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                if s.recv(16).startswith(b"HTTP/1.1"):
                    return True
        except OSError:
            time.sleep(0.2)
    return False


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    await reader.readexactly(length)
    return status


async def _worker(port: int, path: str, stop_at: float, lat: list[float], errs: list[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {BENCH_KEY}\r\nContent-Length: {len(BODY)}\r\n\r\n"
    ).encode() + BODY
    while time.perf_counter() < stop_at:
        started = time.perf_counter()
        writer.write(request)
        status = await _read_response(reader)
        lat.append((time.perf_counter() - started) * 1000)
        errs[0] += status != 200
    writer.close()


async def measure(port: int, path: str, concurrency: int, seconds: float, pid: int | None = None) -> Result:
    """Run ``concurrency`` keep-alive connections for ``seconds`` (after a short warm-up)."""
    for warm in (True, False):
        lat: list[float] = []
        errs = [0]
        cpu0 = cpu_s(pid)
        started = time.perf_counter()
        stop_at = started + (0.3 if warm else seconds)
        paths = [path.format(i=i) for i in range(concurrency)]
        await asyncio.gather(*(_worker(port, p, stop_at, lat, errs) for p in paths))
    elapsed = time.perf_counter() - started
    lat.sort()
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]  # noqa: E731
    return Result(pick(0.50), pick(0.99), len(lat) / elapsed, errs[0], (cpu_s(pid) - cpu0) * 1000 / max(1, len(lat)))


def median_result(results: list[Result]) -> Result:
    """Per-figure median over rounds (the machine is shared, so single runs are noisy)."""
    pick = lambda xs: statistics.median(xs)  # noqa: E731
    return Result(pick([r.p50_ms for r in results]), pick([r.p99_ms for r in results]),
                  pick([r.rps for r in results]), sum(r.errors for r in results),
                  pick([r.cpu_ms for r in results]))


async def measure_level(
    level: int, seconds: float, rounds: int, ports: dict[str, int], pids: dict[str, int]
) -> tuple[Result, Result, Result | None]:
    """Interleave the targets round by round so load from elsewhere hits them alike."""
    runs: dict[str, list[Result]] = {"direct": [], "ours": [], "lite": []}
    chat, session = "/v1/chat/completions", "/sessions/bench-{i}/v1/chat/completions"
    for _ in range(rounds):
        runs["direct"].append(await measure(ports["up"], chat, level, seconds, pids["up"]))
        runs["ours"].append(await measure(ports["gw"], session, level, seconds, pids["gw"]))
        if "lite" in ports:
            runs["lite"].append(await measure(ports["lite"], chat, level, seconds, pids["lite"]))
    lite = median_result(runs["lite"]) if runs["lite"] else None
    return median_result(runs["direct"]), median_result(runs["ours"]), lite


def start_litellm(upstream_port: int) -> tuple[subprocess.Popen[bytes] | None, int, str]:
    """LiteLLM's proxy on the same upstream, or (None, 0, why not)."""
    if not LITELLM_BIN.exists():
        return None, 0, f"no LiteLLM virtualenv at {LITELLM_BIN.relative_to(REPO)}"
    cfg = Path(tempfile.mkdtemp()) / "litellm.yaml"
    cfg.write_text(
        "model_list:\n  - model_name: policy\n    litellm_params:\n      model: openai/policy\n"
        f"      api_base: http://127.0.0.1:{upstream_port}/v1\n      api_key: sk-upstream\n"
        "litellm_settings:\n  telemetry: false\n"
    )
    port = free_port()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR",
           "LITELLM_MASTER_KEY": BENCH_KEY}
    proc = spawn([str(LITELLM_BIN), "--config", str(cfg), "--port", str(port), "--num_workers", "1"], env)
    if not wait_ready(port, "/health/liveliness", 180, proc):
        proc.kill()
        err = (proc.stderr.read() if proc.stderr else b"")[-800:].decode(errors="replace")
        return None, 0, f"LiteLLM did not become ready: {err}"
    return proc, port, ""


def fmt(r: Result) -> str:
    """Compact cell."""
    return f"p50 {r.p50_ms:7.2f} p99 {r.p99_ms:7.2f} {r.rps:6.0f}/s cpu {r.cpu_ms:.3f} ms/req"


def report(level: int, direct: Result, ours: Result, lite: Result | None) -> None:
    """One line per concurrency: absolute numbers, added latency and ratios."""
    add50, add99 = ours.p50_ms - direct.p50_ms, ours.p99_ms - direct.p99_ms
    line = (f"c={level:<4} direct[{fmt(direct)}]  gateway[{fmt(ours)}] added p50 {add50:+.2f} ms "
            f"p99 {add99:+.2f} ms  rps gateway/direct {ours.rps / direct.rps:.2f}  errors {ours.errors}")
    if lite is not None:
        l50, l99 = lite.p50_ms - direct.p50_ms, lite.p99_ms - direct.p99_ms
        line += (f"\n       litellm[{fmt(lite)}] added p50 {l50:+.2f} ms p99 {l99:+.2f} ms errors {lite.errors}"
                 f"  | ours/litellm: added-p50 {add50 / l50 if l50 > 0 else float('nan'):.2f}x "
                 f"added-p99 {add99 / l99 if l99 > 0 else float('nan'):.2f}x rps {ours.rps / lite.rps:.2f}x "
                 f"cpu/req {ours.cpu_ms / lite.cpu_ms if lite.cpu_ms else float('nan'):.2f}x")
    print(line, flush=True)


async def run(levels: list[int], seconds: float, rounds: int, with_litellm: bool) -> None:
    """Start the servers, measure every level, stop the servers."""
    up, gw = free_port(), free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [spawn([sys.executable, __file__, "--serve-upstream", str(up)], env)]
    procs.append(spawn([sys.executable, __file__, "--serve-gateway", str(gw), f"http://127.0.0.1:{up}"], env))
    lite, lport, why = start_litellm(up) if with_litellm else (None, 0, "skipped by --no-litellm")
    procs += [lite] if lite else []
    ports = {"up": up, "gw": gw, **({"lite": lport} if lite else {})}
    pids = {"up": procs[0].pid, "gw": procs[1].pid, **({"lite": lite.pid} if lite else {})}
    try:
        assert wait_ready(up, "/v1/models") and wait_ready(gw, "/v1/models"), "servers did not start"
        lite_state = "on" if lite else "off: " + why
        print(f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.1f} rounds={rounds} seconds/round={seconds} "
              f"litellm={lite_state}")
        for level in levels:
            direct, ours, other = await measure_level(level, seconds, rounds, ports, pids)
            report(level, direct, ours, other)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=20)


def main() -> None:
    """Parse arguments; serve a child role or run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--concurrency", default="1,16,64,256")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-litellm", action="store_true")
    parser.add_argument("--serve-upstream", type=int)
    parser.add_argument("--serve-gateway", nargs=2)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    if args.serve_upstream:
        return serve_upstream(args.serve_upstream)
    if args.serve_gateway:
        return serve_gateway(int(args.serve_gateway[0]), args.serve_gateway[1])
    levels = [int(x) for x in args.concurrency.split(",")]
    asyncio.run(run(levels, args.seconds, args.rounds, not args.no_litellm))


if __name__ == "__main__":
    main()
