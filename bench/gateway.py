"""Gateway overhead: latency added and requests/s, next to the upstream called directly.

Starts servers as separate processes on loopback: the fake OpenAI-shaped
upstream; our gateway as production runs it (the service app from
``create_app``: bearer auth against a key in a throwaway database, the request
middleware with metrics and the JSON access log written to a file, traces
batched into the database); the bare gateway router ("router only", no auth,
middleware or database, traces in memory) so the cost of the stack shows; and,
when its virtualenv exists (``scripts/litellm_peer_venv.sh`` builds it), LiteLLM's
proxy pointed at the same upstream. Our gateway runs as its own process, as
``trajforge up --split`` runs it (split mode). The
throwaway database is a fresh Postgres database on 127.0.0.1:5432 (dropped at
the end), or a temporary SQLite file when Postgres is not reachable. Each target
is driven by a minimal keep-alive HTTP/1.1 load generator at several
concurrency levels; it prints p50/p99 latency, the latency added over the
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
sys.path.insert(0, str(REPO))

from bench import free_port  # noqa: E402

# Built by scripts/litellm_peer_venv.sh (LiteLLM lives apart from the service's own environment).
LITELLM_VENV = Path(os.environ.get("LITELLM_PEER_VENV", REPO / ".cache" / "litellm-venv"))
LITELLM_BIN = LITELLM_VENV / "bin" / "litellm"
# LiteLLM's master key; our real stack gets a key created in its database (``GW_KEY``).
LITE_KEY = "sk-bench-" + secrets.token_hex(16)
PG_ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
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


def serve_upstream(port: int) -> None:
    """Child process: the fake upstream, without its request log."""
    import uvicorn

    from services.gateway.testing_upstream import make_upstream_app

    app = make_upstream_app("bench", log_requests=False)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def serve_gateway(port: int, upstream: str, db_url: str, workers: int = 1) -> None:
    """Child process: the gateway service app as deployed (auth, middleware, metrics, DB traces), in
    ``workers`` processes as ``trajforge serve gateway --workers N`` runs it."""
    import json

    from services.gateway.app import create_app
    from shared.settings import Settings
    from shared.web.server import serve_workers

    cfg = Path(tempfile.mkdtemp()) / "gateway.json"
    cfg.write_text(json.dumps({"upstreams": [{"model": "policy", "url": upstream}]}))
    settings = Settings(database_url=db_url, gateway_config=str(cfg), auth_enabled=True)
    # The access log stays at its default level, on stderr, which the parent points at a file.
    sys.exit(serve_workers(lambda: create_app(settings), host="127.0.0.1", port=port, workers=workers,
                           log_level="warning"))


def serve_router(port: int, upstream: str) -> None:
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


async def _worker(port: int, path: str, key: str, stop_at: float, lat: list[float], errs: list[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {key}\r\nContent-Length: {len(BODY)}\r\n\r\n"
    ).encode() + BODY
    while time.perf_counter() < stop_at:
        started = time.perf_counter()
        writer.write(request)
        status = await _read_response(reader)
        lat.append((time.perf_counter() - started) * 1000)
        errs[0] += status != 200
    writer.close()


@dataclass
class Target:
    """One server under load: where it listens, what it is sent, and its process (for CPU)."""

    port: int
    path: str
    pid: int
    key: str = ""


async def measure(t: Target, concurrency: int, seconds: float) -> Result:
    """Run ``concurrency`` keep-alive connections for ``seconds`` (after a short warm-up)."""
    for warm in (True, False):
        lat: list[float] = []
        errs = [0]
        cpu0 = cpu_s(t.pid)
        started = time.perf_counter()
        stop_at = started + (0.3 if warm else seconds)
        paths = [t.path.format(i=i) for i in range(concurrency)]
        await asyncio.gather(*(_worker(t.port, p, t.key, stop_at, lat, errs) for p in paths))
    elapsed = time.perf_counter() - started
    lat.sort()
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]  # noqa: E731
    return Result(pick(0.50), pick(0.99), len(lat) / elapsed, errs[0], (cpu_s(t.pid) - cpu0) * 1000 / max(1, len(lat)))


def median_result(results: list[Result]) -> Result:
    """Per-figure median over rounds (the machine is shared, so single runs are noisy)."""
    pick = lambda xs: statistics.median(xs)  # noqa: E731
    return Result(pick([r.p50_ms for r in results]), pick([r.p99_ms for r in results]),
                  pick([r.rps for r in results]), sum(r.errors for r in results),
                  pick([r.cpu_ms for r in results]))


async def measure_level(level: int, seconds: float, rounds: int, targets: dict[str, Target]) -> dict[str, Result]:
    """Interleave the targets round by round so load from elsewhere hits them alike."""
    runs: dict[str, list[Result]] = {name: [] for name in targets}
    for _ in range(rounds):
        for name, target in targets.items():
            runs[name].append(await measure(target, level, seconds))
    return {name: median_result(results) for name, results in runs.items()}


def start_litellm(upstream_port: int) -> tuple[subprocess.Popen[bytes] | None, int, str]:
    """LiteLLM's proxy on the same upstream, or (None, 0, why not)."""
    if not LITELLM_BIN.exists():
        return None, 0, (f"ABSENT: no LiteLLM virtualenv at {LITELLM_VENV}; build it with "
                         "`bash scripts/litellm_peer_venv.sh` (or pass --no-litellm)")
    cfg = Path(tempfile.mkdtemp()) / "litellm.yaml"
    cfg.write_text(
        "model_list:\n  - model_name: policy\n    litellm_params:\n      model: openai/policy\n"
        f"      api_base: http://127.0.0.1:{upstream_port}/v1\n      api_key: sk-upstream\n"
        "litellm_settings:\n  telemetry: false\n"
    )
    port = free_port()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR",
           "LITELLM_MASTER_KEY": LITE_KEY}
    proc = spawn([str(LITELLM_BIN), "--config", str(cfg), "--port", str(port), "--num_workers", "1"], env)
    if not wait_ready(port, "/health/liveliness", 180, proc):
        proc.kill()
        err = (proc.stderr.read() if proc.stderr else b"")[-800:].decode(errors="replace")
        return None, 0, f"LiteLLM did not become ready: {err}"
    return proc, port, ""


async def _pg_admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_ADMIN_DSN, timeout=3)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def create_database() -> tuple[str, str]:
    """A fresh throwaway database: (SQLAlchemy URL, Postgres name or SQLite path)."""
    name = "trajforge_bench_" + secrets.token_hex(4)
    try:
        await _pg_admin(f'CREATE DATABASE "{name}"')
        return f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}", name
    except (TimeoutError, OSError, ImportError):
        path = str(Path(tempfile.mkdtemp()) / "bench.db")
        return f"sqlite+aiosqlite:///{path}", path


async def drop_database(url: str, name: str) -> None:
    """Remove what ``create_database`` made."""
    if url.startswith("postgresql"):
        await _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    else:
        Path(name).unlink(missing_ok=True)


async def migrate_and_key(url: str) -> str:
    """Migrate the database and create the API key the load generator sends."""
    from shared.auth import create_key
    from shared.db.migrate import upgrade
    from shared.db.session import create_engine_for, make_sessionmaker
    from shared.settings import Settings

    await asyncio.to_thread(upgrade, url)
    settings = Settings(database_url=url)
    engine = create_engine_for(settings)
    try:
        async with make_sessionmaker(engine)() as session:
            _, key = await create_key(session, "bench", salt=settings.key_salt)
            await session.commit()
    finally:
        await engine.dispose()
    return key


def fmt(r: Result) -> str:
    """Compact cell."""
    return f"p50 {r.p50_ms:7.2f} p99 {r.p99_ms:7.2f} {r.rps:6.0f}/s cpu {r.cpu_ms:.3f} ms/req"


def _added(r: Result, direct: Result) -> str:
    return f"added p50 {r.p50_ms - direct.p50_ms:+.2f} ms p99 {r.p99_ms - direct.p99_ms:+.2f} ms"


def headlines(level: int, res: dict[str, Result], workers: int = 1) -> None:
    """The figures ``make bench`` tabulates: ours next to direct and LiteLLM at this concurrency."""
    from bench import headline

    direct, ours, lite = res["direct"], res["ours"], res.get("lite")
    where = f"c={level}, split process{f' x{workers}' if workers > 1 else ''}, traces to DB"
    headline("gateway", f"req/s, {where}", ours.rps, direct.rps, baseline_name="direct upstream", unit="req/s")
    if lite is not None:
        headline("gateway", f"req/s, {where}", ours.rps, lite.rps, baseline_name="LiteLLM proxy", unit="req/s")
        headline("gateway", f"CPU per request, {where}", ours.cpu_ms, lite.cpu_ms, baseline_name="LiteLLM proxy",
                 unit="ms", higher_is_better=False)
        headline("gateway", f"added p50, {where}", ours.p50_ms - direct.p50_ms, lite.p50_ms - direct.p50_ms,
                 baseline_name="LiteLLM proxy", unit="ms", higher_is_better=False)


def report(level: int, res: dict[str, Result]) -> None:
    """One block per concurrency: absolute numbers, added latency and ratios."""
    direct, ours, bare = res["direct"], res["ours"], res["router"]
    add50, add99 = ours.p50_ms - direct.p50_ms, ours.p99_ms - direct.p99_ms
    line = (f"c={level:<4} direct[{fmt(direct)}]\n       gateway[{fmt(ours)}] {_added(ours, direct)}  "
            f"rps gateway/direct {ours.rps / direct.rps:.2f}  errors {ours.errors}\n"
            f"       router only[{fmt(bare)}] {_added(bare, direct)}  errors {bare.errors}")
    lite = res.get("lite")
    if lite is not None:
        l50, l99 = lite.p50_ms - direct.p50_ms, lite.p99_ms - direct.p99_ms
        line += (f"\n       litellm[{fmt(lite)}] {_added(lite, direct)} errors {lite.errors}"
                 f"  | ours/litellm: added-p50 {add50 / l50 if l50 > 0 else float('nan'):.2f}x "
                 f"added-p99 {add99 / l99 if l99 > 0 else float('nan'):.2f}x rps {ours.rps / lite.rps:.2f}x "
                 f"cpu/req {ours.cpu_ms / lite.cpu_ms if lite.cpu_ms else float('nan'):.2f}x")
    print(line, flush=True)


def start_ours(up: int, db_url: str, log_path: Path,
               workers: int = 1) -> tuple[list[subprocess.Popen[bytes]], dict[str, int]]:
    """The upstream, the real gateway stack (stderr, i.e. its JSON logs, to a file) and the bare router."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    upstream = f"http://127.0.0.1:{up}"
    gw, bare = free_port(), free_port()
    procs = [spawn([sys.executable, __file__, "--serve-upstream", str(up)], env)]
    with log_path.open("ab") as log:
        procs.append(subprocess.Popen([sys.executable, __file__, "--serve-gateway", str(gw), upstream, db_url,
                                       "--gateway-workers", str(workers)],
                                      cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=log))
    procs.append(spawn([sys.executable, __file__, "--serve-router", str(bare), upstream], env))
    return procs, {"gw": gw, "router": bare}


async def run(levels: list[int], seconds: float, rounds: int, with_litellm: bool, workers: int = 1) -> None:
    """Make the database, start the servers, measure every level, stop and clean up."""
    db_url, db_name = await create_database()
    log_path = Path(tempfile.mkdtemp()) / "gateway-access.log"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        key = await migrate_and_key(db_url)
        up = free_port()
        procs, ports = start_ours(up, db_url, log_path, workers)
        lite, lport, why = start_litellm(up) if with_litellm else (None, 0, "skipped by --no-litellm")
        procs += [lite] if lite else []
        assert all(wait_ready(p, "/healthz" if p == ports["gw"] else "/v1/models") for p in (up, *ports.values())), \
            "servers did not start"
        chat, session = "/v1/chat/completions", "/sessions/bench-{i}/v1/chat/completions"
        targets = {"direct": Target(up, chat, procs[0].pid), "ours": Target(ports["gw"], session, procs[1].pid, key),
                   "router": Target(ports["router"], session, procs[2].pid)}
        if lite:
            targets["lite"] = Target(lport, chat, lite.pid, LITE_KEY)
        print(f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.1f} rounds={rounds} seconds/round={seconds} "
              f"db={db_url.split(':', 1)[0]} gateway workers={workers} litellm={'on' if lite else 'off: ' + why}")
        if not lite:
            print(f"LiteLLM peer: {why}", file=sys.stderr, flush=True)
        for level in levels:
            res = await measure_level(level, seconds, rounds, targets)
            report(level, res)
            if level == 16 or (level == max(levels) and 16 not in levels):
                headlines(level, res, workers)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=20)
        await drop_database(db_url, db_name)


def main() -> None:
    """Parse arguments; serve a child role or run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--concurrency", default="1,16,64,256")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-litellm", action="store_true")
    parser.add_argument("--gateway-workers", type=int, default=1,
                        help="processes serving our gateway (trajforge serve gateway --workers N)")
    parser.add_argument("--serve-upstream", type=int)
    parser.add_argument("--serve-gateway", nargs=3)
    parser.add_argument("--serve-router", nargs=2)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    if args.serve_upstream:
        return serve_upstream(args.serve_upstream)
    if args.serve_gateway:
        return serve_gateway(int(args.serve_gateway[0]), args.serve_gateway[1], args.serve_gateway[2],
                             args.gateway_workers)
    if args.serve_router:
        return serve_router(int(args.serve_router[0]), args.serve_router[1])
    levels = [int(x) for x in args.concurrency.split(",")]
    asyncio.run(run(levels, args.seconds, args.rounds, not args.no_litellm, args.gateway_workers))


if __name__ == "__main__":
    main()
