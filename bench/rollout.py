"""Rollout engine benchmark: AsyncRolloutEngine vs a turn-barrier baseline on loopback HTTP.

A simulated policy and simulated tools run in a separate process behind a raw
asyncio HTTP/1.1 server on 127.0.0.1. Latencies are deterministic per
(prompt, member, turn) so both runs face the same work: policy latency per turn
is lognormal, tool latency is Pareto (heavy-tailed, capped like a tool timeout),
each trajectory takes 1..8 turns, and the upstream serves at most ``capacity``
policy requests at once. Printed side by side, as ratios and absolute figures:

- makespan of the real engine under each slot schedule (``--schedules``: fifo,
  turns, estimate), each without and with speculative relaunch of stragglers
  (``--relaunch`` spares per member), vs the lower bound max(longest trajectory
  chain, policy work / capacity) of the batch without spares (relaunch can beat
  it by keeping a spare instead of the longest chain), and what relaunching
  cost: spare and cut (cancelled or surplus) policy calls and tokens against
  the run's own;
- makespan vs the turn-barrier baseline (one batch per turn, wait for the slowest);
- that every group came back with exactly ``group`` members, distinct, each
  with a stop reason;
- orchestration CPU per turn (process time of this process / turns), over HTTP and in-process;
- 1,000 concurrent trajectories in one process, with the error count;
- the policy called directly vs through the embedded gateway (the gateway service's app in this
  process, with its key check, middleware and fast path, behind ``GatewayPolicy``, each call a trace
  row), as a job's shard calls it: makespan ratio and CPU per turn.

With ``--mode embedded,split`` the same workload also runs with its tool calls through the tools
service's client, its app in this process and in its own process over loopback HTTP
(``bench/rollout_split.py``), printed next to the direct run.

A spare is a fresh sample of its prompt (the upstream numbers conversations
of a prompt by first contact, so spares get latencies of their own). A
cancelled call keeps its upstream slot until its service time ends, as with a
server that does not abort on disconnect: relaunch is not flattered by that.
With ``--repeats`` the runs of one capacity are interleaved round-robin and
each figure is the median over repeats (the machine's load moves every run).

Run: ``python bench/rollout.py`` from the repository root.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import multiprocessing as mp
import os
import random
import re
import selectors
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import headline
from services.rollout import AsyncRolloutEngine, PolicyOutput, RolloutLimits, ToolResult
from services.rollout.schedule import DEFAULT_SCHEDULE, SCHEDULES, Schedule
from shared.schema import SamplingParams

MAX_TURNS = 8
_CONV = re.compile(r"conv=(\S+)")


# ---------------------------------------------------------------- latency model


class Model:
    """Deterministic latencies per (prompt, member, turn)."""

    def __init__(self, *, seed: int, policy_median_s: float, policy_sigma: float,
                 tool_scale_s: float, tool_alpha: float, tool_cap_s: float) -> None:
        self.seed, self.policy_median_s, self.policy_sigma = seed, policy_median_s, policy_sigma
        self.tool_scale_s, self.tool_alpha, self.tool_cap_s = tool_scale_s, tool_alpha, tool_cap_s

    def _rng(self, *key: object) -> random.Random:
        return random.Random(f"{self.seed}:" + ":".join(map(str, key)))

    def turns(self, conv: str) -> int:
        """How many policy turns this trajectory takes (1..8)."""
        return self._rng("n", conv).randint(1, MAX_TURNS)

    def policy_s(self, conv: str, turn: int) -> float:
        """Lognormal service time of one policy call."""
        return self.policy_median_s * math.exp(self.policy_sigma * self._rng("p", conv, turn).gauss(0, 1))

    def tool_s(self, conv: str, turn: int) -> float:
        """Pareto service time of one tool call, capped (the tool timeout)."""
        u = self._rng("t", conv, turn).random()
        return min(self.tool_cap_s, self.tool_scale_s / (1.0 - u) ** (1.0 / self.tool_alpha))

    def bounds(self, prompts: int, group: int, capacity: int) -> tuple[float, float, int]:
        """(longest chain, policy work / capacity, policy calls) for the whole batch."""
        chain, work, calls = 0.0, 0.0, 0
        for p in range(prompts):
            for k in range(group):
                conv = f"p{p}/{k}"
                n = self.turns(conv)
                pol = [self.policy_s(conv, t) for t in range(n)]
                tools = [self.tool_s(conv, t) for t in range(n - 1)]
                chain = max(chain, sum(pol) + sum(tools))
                work, calls = work + sum(pol), calls + n
        return chain, work / capacity, calls


# ---------------------------------------------------------------- loopback server (child process)


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, bytes] | None:
    line = await reader.readline()
    if not line:
        return None
    path = line.split()[1].decode()
    length = 0
    while (header := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = header.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return path, await reader.readexactly(length)


class _Upstream:
    """The simulated policy + tools; policy calls are limited to ``capacity`` at once."""

    def __init__(self, model: Model, capacity: int) -> None:
        self.model, self.capacity = model, asyncio.Semaphore(capacity)
        self.first_contacts: dict[str, int] = {}
        self.inflight = self.peak = 0

    async def policy(self, body: dict[str, Any]) -> dict[str, Any]:
        """Serve one policy turn under the capacity limit."""
        conv = body["conv"] or self._new_conv(body["prompt"])
        turn = body["turn"]
        async with self.capacity:
            self.inflight += 1
            self.peak = max(self.peak, self.inflight)
            try:
                await asyncio.sleep(self.model.policy_s(conv, turn))
            finally:
                self.inflight -= 1
        calls = None
        if turn < self.model.turns(conv) - 1:
            args = json.dumps({"conv": conv, "turn": turn})
            calls = [{"id": f"c{turn}", "type": "function", "function": {"name": "work", "arguments": args}}]
        return {"text": f"conv={conv} turn={turn}", "tool_calls": calls, "tokens": 16}

    def _new_conv(self, prompt: str) -> str:
        k = self.first_contacts.get(prompt, 0)
        self.first_contacts[prompt] = k + 1
        return f"{prompt}/{k}"

    async def tool(self, body: dict[str, Any]) -> dict[str, Any]:
        """Serve one tool call."""
        await asyncio.sleep(self.model.tool_s(body["conv"], body["turn"]))
        return {"content": "ok"}

    async def serve(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """Answer one request of the bench's protocol."""
        if path == "/reset":
            self.first_contacts, self.peak = {}, 0
            if "capacity" in body:
                self.capacity = asyncio.Semaphore(body["capacity"])
            return {}
        if path == "/stats":
            return {"peak_inflight": self.peak}
        if path == "/v1/chat/completions":  # the gateway's upstream call
            return _openai_chat(await self.policy(_request_for(body["messages"])))
        return await (self.policy if path == "/policy" else self.tool)(body)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve requests on one keep-alive connection."""
        try:
            while (req := await _read_request(reader)) is not None:
                path, raw = req
                out = await self.serve(path, json.loads(raw))
                data = json.dumps(out).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


def _serve(model_kw: dict[str, Any], capacity: int, conn: Any) -> None:
    async def main() -> None:
        """Run the comparisons and print the report."""
        upstream = _Upstream(Model(**model_kw), capacity)
        server = await asyncio.start_server(upstream.handle, "127.0.0.1", 0, backlog=4096)
        conn.send(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# ---------------------------------------------------------------- client side (this process)


def _openai_chat(reply: dict[str, Any]) -> dict[str, Any]:
    """A simulated turn as the OpenAI chat answer a vLLM upstream gives (token ids included)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply["text"]}
    if reply["tool_calls"]:
        message["tool_calls"] = reply["tool_calls"]
    return {"id": "chatcmpl-sim", "object": "chat.completion", "created": 0, "model": "sim",
            "choices": [{"index": 0, "message": message, "token_ids": [0] * reply["tokens"],
                         "finish_reason": "tool_calls" if reply["tool_calls"] else "stop"}],
            "prompt_token_ids": [0], "usage": {"prompt_tokens": 1, "completion_tokens": reply["tokens"]}}


class Loopback:
    """A tiny keep-alive HTTP/1.1 client pool (cancellation drops the connection)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST a JSON body and return the JSON reply."""
        reader, writer = self._idle.pop() if self._idle else await asyncio.open_connection("127.0.0.1", self.port)
        body = json.dumps(payload).encode()
        try:
            writer.write(b"POST %s HTTP/1.1\r\nHost: bench\r\nContent-Length: %d\r\n\r\n%s"
                         % (path.encode(), len(body), body))
            reply = await _read_response(reader)
        except BaseException:
            writer.close()
            raise
        self._idle.append((reader, writer))
        return json.loads(reply)

    def close(self) -> None:
        """Close idle connections."""
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()


async def _read_response(reader: asyncio.StreamReader) -> bytes:
    await reader.readline()
    length = 0
    while (header := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = header.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return await reader.readexactly(length)


class Direct:
    """The same protocol served in this process (no network): for the virtual-clock runs.

    A cancelled call releases its upstream slot at once here (a server that aborts on disconnect).
    """

    def __init__(self, upstream: _Upstream) -> None:
        self.upstream = upstream

    async def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Serve one request in process."""
        return await self.upstream.serve(path, payload)

    def close(self) -> None:
        """Nothing to close."""


class _FastForward(selectors.DefaultSelector):
    """A selector that, instead of sleeping until the next timer, moves its loop's clock there."""

    loop: VirtualClockLoop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events = super().select(0)
        if not events and timeout:
            self.loop.now += timeout
        return events


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """An event loop on a virtual clock: timers fire in order, no time passes while code runs, so a
    makespan measures the engine's decisions alone (none of this machine's CPU speed or load)."""

    def __init__(self) -> None:
        selector = _FastForward()
        self.now = 0.0
        super().__init__(selector)
        selector.loop = self

    def time(self) -> float:
        """Virtual seconds since the loop started."""
        return self.now


def _request_for(messages: list[dict[str, Any]]) -> dict[str, Any]:
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    assistants = [m for m in messages if m["role"] == "assistant"]
    conv = _CONV.search(assistants[0]["content"]).group(1) if assistants else None  # type: ignore[union-attr]
    return {"prompt": prompt, "conv": conv, "turn": len(assistants)}


Client = Loopback | Direct


class HttpPolicy:
    """The Policy port over the loopback upstream (message mode)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None,
                   sampling: SamplingParams, extra_body: dict[str, Any] | None = None) -> PolicyOutput:
        """Sample one turn."""
        out = await self.client.post("/policy", _request_for(messages))
        return PolicyOutput(text=out["text"], tool_calls=out["tool_calls"], token_ids=[0] * out["tokens"])

    async def generate(self, prompt_ids: list[int], *, sampling: SamplingParams) -> PolicyOutput:
        """Token mode is not simulated."""
        raise ValueError("the simulated policy serves message mode only")


class HttpTools:
    """The ToolExecutor port over the loopback upstream."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def tool_infos(self) -> list[dict[str, Any]]:
        """Schemas of the simulated tools."""
        return [{"type": "function", "function": {"name": "work", "parameters": {"type": "object"}}}]

    async def call(self, tool_call: dict[str, Any]) -> ToolResult:
        """Run one simulated tool call."""
        out = await self.client.post("/tool", json.loads(tool_call["function"]["arguments"]))
        return ToolResult(content=out["content"])


def _prompts(n: int) -> list[dict[str, Any]]:
    return [{"id": f"p{i}", "messages": [{"role": "user", "content": f"p{i}"}]} for i in range(n)]


@dataclass
class EngineRun:
    """One engine run: makespan, process CPU, counters (engine.stats) and group problems found."""

    wall: float
    cpu: float
    stats: dict[str, int]
    errors: int
    bad_groups: list[str] = field(default_factory=list)


def _check_groups(groups: list[Any], group: int) -> tuple[int, list[str]]:
    """(members without a normal stop, groups that are not exactly ``group`` distinct members)."""
    bad, errors = [], 0
    for g in groups:
        indexes = [t.sample_index for t in g.trajectories]
        ids = {t.id for t in g.trajectories} | {c.trajectory_id for c in g.cut}
        if len(indexes) != group or len(set(indexes)) != group or len(ids) != group + len(g.cut):
            bad.append(g.group_id)
        errors += sum(t.stop_reason not in ("stop", "max_turns") for t in g.trajectories)
    return errors, bad


async def run_engine(client: Client, prompts: int, group: int, concurrency: int, schedule: Schedule,
                     relaunch: float = 0.0, policy: Any = None) -> EngineRun:
    """Makespan, CPU and counters of AsyncRolloutEngine on the loopback upstream (``policy``: another route to it)."""
    engine = AsyncRolloutEngine(policy or HttpPolicy(client), tools=HttpTools(client), concurrency=concurrency,
                                limits=RolloutLimits(max_turns=MAX_TURNS), schedule=schedule, relaunch=relaunch)
    loop = asyncio.get_running_loop()
    cpu0, t0 = time.process_time(), loop.time()
    groups = await engine.collect_batch(_prompts(prompts), group_size=group)
    wall, cpu = loop.time() - t0, time.process_time() - cpu0
    errors, bad = _check_groups(groups, group)
    return EngineRun(wall, cpu, engine.stats, errors, bad)


async def run_barrier(client: Client, prompts: int, group: int) -> float:
    """Makespan of the turn-barrier baseline: one batch per turn, wait for the slowest."""
    convs = [{"messages": [{"role": "user", "content": f"p{i}"}]} for i in range(prompts) for _ in range(group)]
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    active = convs
    for _ in range(MAX_TURNS):
        outs = await asyncio.gather(*(client.post("/policy", _request_for(c["messages"])) for c in active))
        calls = []
        for conv, out in zip(active, outs, strict=True):
            conv["messages"].append({"role": "assistant", "content": out["text"]})
            if out["tool_calls"]:
                calls.append((conv, json.loads(out["tool_calls"][0]["function"]["arguments"])))
        results = await asyncio.gather(*(client.post("/tool", args) for _, args in calls))
        for (conv, _), res in zip(calls, results, strict=True):
            conv["messages"].append({"role": "tool", "content": res["content"]})
        active = [conv for conv, _ in calls]
        if not active:
            break
    return loop.time() - t0


class _InstantPolicy:
    """Zero-latency in-process policy: measures the engine's own CPU per turn."""

    async def chat(self, messages: list[dict[str, Any]], *, tools: Any, sampling: SamplingParams,
                   extra_body: Any = None) -> PolicyOutput:
        """Sample one turn."""
        await asyncio.sleep(0)
        turn = sum(m["role"] == "assistant" for m in messages)
        calls = [{"id": "c", "type": "function", "function": {"name": "work", "arguments": "{}"}}]
        return PolicyOutput(text="x", tool_calls=calls if turn < MAX_TURNS - 1 else None, token_ids=[0] * 16)

    async def generate(self, prompt_ids: list[int], *, sampling: SamplingParams) -> PolicyOutput:
        """Token mode is not simulated."""
        raise ValueError("the simulated policy serves message mode only")


class _InstantTools:
    def tool_infos(self) -> list[dict[str, Any]]:
        """Schemas of the simulated tools."""
        return []

    async def call(self, tool_call: dict[str, Any]) -> ToolResult:
        """Run one simulated tool call."""
        return ToolResult(content="ok")


async def engine_cpu_per_turn(prompts: int, group: int) -> tuple[float, int]:
    """Process CPU per turn of the engine alone (no network)."""
    engine = AsyncRolloutEngine(_InstantPolicy(), tools=_InstantTools(), concurrency=256,
                                limits=RolloutLimits(max_turns=MAX_TURNS))
    cpu0 = time.process_time()
    await engine.collect_batch(_prompts(prompts), group_size=group)
    turns = engine.stats["turns"]
    return (time.process_time() - cpu0) / turns, turns


def _start_server(model_kw: dict[str, Any], capacity: int) -> tuple[mp.Process, int]:
    parent, child = mp.Pipe()
    proc = mp.Process(target=_serve, args=(model_kw, capacity, child), daemon=True)
    proc.start()
    return proc, parent.recv()


def _variants(args: argparse.Namespace) -> list[tuple[str, Schedule, float]]:
    out: list[tuple[str, Schedule, float]] = [(name, name, 0.0) for name in args.schedules]
    if args.relaunch > 0:
        out += [(f"{name}+relaunch", name, args.relaunch) for name in args.schedules]
    return out


async def compare(client: Client, model: Model, args: argparse.Namespace, capacity: int, repeats: int
                  ) -> dict[str, Any]:
    """Every engine variant and the turn barrier vs the lower bound at one upstream capacity."""
    chain, cap_bound, calls = model.bounds(args.prompts, args.group, capacity)
    runs: dict[str, list[EngineRun]] = {name: [] for name, _, _ in _variants(args)}
    barrier: list[float] = []
    for _ in range(repeats):  # round-robin, so a change of the machine's load hits every variant
        for name, schedule, relaunch in _variants(args):
            await client.post("/reset", {"capacity": capacity})
            runs[name].append(await run_engine(client, args.prompts, args.group, capacity, schedule, relaunch))
        await client.post("/reset", {"capacity": capacity})
        barrier.append(await run_barrier(client, args.prompts, args.group))
    return {"capacity": capacity, "chain": chain, "cap_bound": cap_bound, "lower": max(chain, cap_bound),
            "calls": calls, "runs": runs, "barrier": statistics.median(barrier)}


@contextlib.asynccontextmanager
async def embedded_gateway(port: int, db_path: Path) -> AsyncIterator[Any]:
    """The gateway in this process, as a job's shard reaches it when embedded: the gateway service's
    app (auth with the shard's key, the request middleware with its JSON access log, here to a file,
    the proxy's fast path, traces batched into the database: SQLite) behind the gateway client
    (``GatewayPolicy``), its upstream the simulated policy on loopback."""
    import logging

    from services.gateway.app import SERVICE
    from services.rollout.gateway_policy import GatewayPolicy
    from shared.auth import create_key
    from shared.clients import Endpoint, GatewayClient
    from shared.db.migrate import upgrade
    from shared.db.session import create_engine_for, make_sessionmaker
    from shared.settings import Settings
    from shared.web import create_app

    url = f"sqlite+aiosqlite:///{db_path}"
    await asyncio.to_thread(upgrade, url)
    config = db_path.with_suffix(".json")
    config.write_text(json.dumps({"upstreams": [{"model": "sim", "url": f"http://127.0.0.1:{port}", "name": "sim",
                                                 "logprobs": False}]}))
    settings = Settings(database_url=url, gateway_config=str(config), auth_enabled=True)
    engine = create_engine_for(settings)  # as the app makes its own: WAL, JSON columns through orjson
    maker = make_sessionmaker(engine)
    async with maker() as session:
        _, key = await create_key(session, "bench-shard", salt=settings.key_salt)
        await session.commit()
    app = create_app(SERVICE, settings=settings, engine=engine, sessionmaker=maker)
    log = db_path.with_suffix(".log").open("a")
    logging.getLogger().handlers[0].setStream(log)  # type: ignore[attr-defined]
    try:
        async with app.router.lifespan_context(app):
            client = GatewayClient(Endpoint("gateway", "http://gateway.internal", app), api_key=key, timeout_s=600)
            try:
                yield GatewayPolicy(client, model="sim", session_for=lambda t: f"bench-{t.id}")
            finally:
                await client.aclose()
    finally:
        logging.getLogger().handlers[0].setStream(sys.stderr)  # type: ignore[attr-defined]
        log.close()
        await engine.dispose()


async def compare_gateway(client: Loopback, args: argparse.Namespace, capacity: int) -> dict[str, Any]:
    """Makespan with the policy called directly vs through the embedded gateway, alternating runs."""
    direct, via, cpu = [], [], {"direct": 0.0, "gateway": 0.0}
    turns = 0
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.gateway_repeats):
            await client.post("/reset", {"capacity": capacity})
            run = await run_engine(client, args.prompts, args.group, capacity, args.schedule)
            direct.append(run.wall)
            cpu["direct"] += run.cpu
            async with embedded_gateway(client.port, Path(tmp) / f"traces{rep}.db") as policy:
                await client.post("/reset", {"capacity": capacity})
                run = await run_engine(client, args.prompts, args.group, capacity, args.schedule, policy=policy)
            via.append(run.wall)
            cpu["gateway"] += run.cpu
            turns = run.stats["turns"]
            assert run.errors == 0, f"{run.errors} trajectories failed through the gateway"
    return {"capacity": capacity, "direct": direct, "gateway": via, "cpu": cpu, "turns": turns}


def _model_kw(args: argparse.Namespace) -> dict[str, Any]:
    return {"seed": args.seed, "policy_median_s": args.policy_median_s, "policy_sigma": 0.6,
            "tool_scale_s": args.tool_scale_s, "tool_alpha": 1.5, "tool_cap_s": args.tool_cap_s}


async def virtual_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The comparisons in this process on a virtual clock (run it on a VirtualClockLoop)."""
    model = Model(**_model_kw(args))
    client = Direct(_Upstream(model, args.capacities[0]))
    return [await compare(client, model, args, cap, repeats=1) for cap in args.capacities]


async def main(args: argparse.Namespace, virtual: list[dict[str, Any]]) -> None:
    """Run the comparisons over loopback HTTP and print the report, the virtual-clock rows first."""
    model_kw = _model_kw(args)
    proc, port = _start_server(model_kw, args.capacities[0])
    client = Loopback(port)
    try:
        rows = [await compare(client, Model(**model_kw), args, cap, args.repeats) for cap in args.capacities]
        engine_cpu, engine_turns = await engine_cpu_per_turn(args.prompts, args.group)
        big = await _thousand(client, args.capacity_1k) if args.capacity_1k else None
        through = await compare_gateway(client, args, args.capacities[0]) if args.gateway_repeats else None
        modes = await _modes(client, port, Model(**model_kw), args) if args.mode else None
    finally:
        client.close()
        proc.terminate()
        proc.join()
    _header(args)
    if virtual:
        print("== virtual clock, in process: the engine's scheduling decisions alone (deterministic; no CPU time)")
        for row in virtual:
            _report_row(row)
            _headline_row(row, "virtual clock")
    print(f"== loopback HTTP, wall clock on this machine (load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs at the end)")
    for row in rows:
        _report_row(row)
        _headline_row(row, "loopback HTTP")
    _report_tail(engine_cpu, engine_turns, big)
    if through is not None:
        _report_gateway(through)
    if modes is not None:
        from bench.rollout_split import report

        report(modes, args.capacities[0])


def _report_gateway(m: dict[str, Any]) -> None:
    d, g = sorted(m["direct"]), sorted(m["gateway"])
    med_d, med_g = d[len(d) // 2], g[len(g) // 2]
    runs = len(d)
    print(f"policy through the embedded gateway (capacity {m['capacity']}, {runs} alternating runs each, "
          f"every call a trace row):")
    print(f"  direct policy   makespan median {med_d:.3f} s (runs {', '.join(f'{x:.3f}' for x in m['direct'])})")
    print(f"  via gateway     makespan median {med_g:.3f} s (runs {', '.join(f'{x:.3f}' for x in m['gateway'])})")
    print(f"  makespan ratio gateway/direct {med_g / med_d:.4f} (target <= 1.02)")
    print(f"  CPU per turn: direct {m['cpu']['direct'] / runs / m['turns'] * 1e3:.3f} ms, "
          f"via gateway {m['cpu']['gateway'] / runs / m['turns'] * 1e3:.3f} ms")
    headline("rollout", f"makespan via gateway, capacity {m['capacity']}", med_g, med_d,
             baseline_name="direct policy", unit="s", higher_is_better=False)


async def _modes(client: Loopback, port: int, model: Model, args: argparse.Namespace) -> list[dict[str, Any]]:
    from bench.rollout_split import run_modes

    return await run_modes(client, port, model, args, args.mode)


async def _thousand(client: Loopback, capacity: int) -> dict[str, Any]:
    """1,000 concurrent trajectories (125 prompts x 8) through one engine in this process,
    against an upstream that admits ``capacity`` requests at once."""
    await client.post("/reset", {"capacity": capacity})
    prompts = [{"id": f"k{i}", "messages": [{"role": "user", "content": f"p{i}"}]} for i in range(125)]
    engine = AsyncRolloutEngine(HttpPolicy(client), tools=HttpTools(client), concurrency=capacity,
                                limits=RolloutLimits(max_turns=MAX_TURNS))
    t0 = time.perf_counter()
    groups = await engine.collect_batch(prompts, group_size=8)
    wall = time.perf_counter() - t0
    trajs = [t for g in groups for t in g.trajectories]
    errors = sum(t.stop_reason not in ("stop", "max_turns") for t in trajs)
    peak = (await client.post("/stats", {}))["peak_inflight"]
    return {"trajectories": len(trajs), "errors": errors, "wall_s": wall, "peak_inflight": peak,
            "turns": engine.stats["turns"]}


def _header(args: argparse.Namespace) -> None:
    print(f"rollout bench: {args.prompts} prompts x group {args.group}, up to {MAX_TURNS} turns; "
          f"policy lognormal median {args.policy_median_s*1e3:.0f} ms (sigma 0.6); tools Pareto(1.5) "
          f"scale {args.tool_scale_s*1e3:.0f} ms, cap {args.tool_cap_s:.1f} s; seed {args.seed}; "
          f"relaunch budget {args.relaunch:.3f} spares per member; median of {args.repeats} run(s) each")


def _report_row(m: dict[str, Any]) -> None:
    lower, barrier = m["lower"], m["barrier"]
    print(f"upstream capacity {m['capacity']} concurrent policy requests: policy calls {m['calls']}; lower bound: "
          f"longest chain {m['chain']:.3f} s, capacity bound {m['cap_bound']:.3f} s -> {lower:.3f} s")
    print(f"  turn-barrier baseline   {barrier:.3f} s = {barrier / lower:.3f}x lower bound")
    print("  engine schedule         makespan  x lower  vs barrier  CPU/turn  policy calls (+spare, cut)   "
          "completion tokens (+spare, cut)  spares kept/started  groups exact")
    for name, runs in m["runs"].items():
        wall = statistics.median(r.wall for r in runs)
        last = runs[-1].stats
        calls, tokens = last["policy_calls"], last["completion_tokens"]
        cpu = statistics.median(r.cpu / r.stats["turns"] for r in runs)
        exact = all(not r.bad_groups and not r.errors for r in runs)
        print(f"  {name:22s} {wall:7.3f} s  {wall / lower:6.3f}x  {barrier / wall:8.2f}x  {cpu * 1e3:6.3f} ms  "
              f"{calls:5d} (+{last['spare_policy_calls'] / calls:5.1%}, {last['cut_policy_calls'] / calls:5.1%})  "
              f"{tokens:7d} (+{last['spare_completion_tokens'] / tokens:5.1%}, "
              f"{last['cut_completion_tokens'] / tokens:5.1%})     {last['spares_kept']:3d}/{last['spares']:3d}"
              f"          {'yes' if exact else 'NO'}")
    print("  targets: <= 1.10x the lower bound, >= 2x the turn barrier; spare/cut shares are of the run's own "
          "policy calls and tokens (last repeat)")


def _headline_row(m: dict[str, Any], clock: str) -> None:
    """The default schedule's makespan next to the turn barrier and the lower bound of the same comparison."""
    runs = m["runs"].get(DEFAULT_SCHEDULE)
    if not runs:  # the default schedule was left out of --schedules
        return
    wall = statistics.median(r.wall for r in runs)
    figure = f"makespan, {DEFAULT_SCHEDULE} schedule, capacity {m['capacity']} ({clock})"
    headline("rollout", figure, wall, m["barrier"], baseline_name="turn-barrier baseline", unit="s",
             higher_is_better=False)
    headline("rollout", figure, wall, m["lower"], baseline_name="lower bound", unit="s", higher_is_better=False)


def _report_tail(engine_cpu: float, engine_turns: int, big: dict[str, Any] | None) -> None:
    print(f"engine alone (in-process instant policy/tools): {engine_cpu*1e3:.3f} ms CPU per turn "
          f"over {engine_turns} turns (target < 1 ms)")
    if big is None:
        return
    print(f"1,000 concurrent trajectories: {big['trajectories']} done, {big['turns']} turns, "
          f"errors {big['errors']}, upstream peak in-flight {big['peak_inflight']}, wall {big['wall_s']:.2f} s")


def _schedules(value: str) -> list[Schedule]:
    names = value.split(",")
    bad = [n for n in names if n not in SCHEDULES]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown schedules {bad}; known: {', '.join(SCHEDULES)}")
    return names  # type: ignore[return-value]


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--capacities", type=lambda v: [int(x) for x in v.split(",")], default=[128, 256],
                    help="upstream max concurrent policy requests, one comparison each")
    ap.add_argument("--capacity-1k", type=int, default=1000)
    ap.add_argument("--policy-median-s", type=float, default=0.06)
    ap.add_argument("--tool-scale-s", type=float, default=0.02)
    ap.add_argument("--tool-cap-s", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--gateway-repeats", type=int, default=3,
                    help="alternating direct / through-the-gateway runs at the first capacity (0: skip)")
    ap.add_argument("--schedule", choices=SCHEDULES, default="estimate",
                    help="the slot schedule of the gateway and --mode comparisons (services/rollout/schedule.py)")
    ap.add_argument("--mode", type=lambda v: [m for m in v.split(",") if m], default=[],
                    help="also run with tool calls through the tools service: embedded, split, or both "
                         "(comma-separated; bench/rollout_split.py)")
    ap.add_argument("--schedules", type=_schedules, default=["fifo", "turns", "estimate"],
                    help=f"comma-separated slot schedules to compare, of: {', '.join(SCHEDULES)}")
    ap.add_argument("--relaunch", type=float, default=0.125,
                    help="spares per member for the +relaunch runs (0: no relaunch runs)")
    ap.add_argument("--repeats", type=int, default=1, help="runs of each variant per capacity (median reported)")
    ap.add_argument("--no-virtual", dest="virtual", action="store_false",
                    help="skip the virtual-clock runs (in process, no network)")
    return ap.parse_args()


if __name__ == "__main__":
    _cli = _args()
    _loop = VirtualClockLoop()
    try:
        _virtual = _loop.run_until_complete(virtual_rows(_cli)) if _cli.virtual else []
    finally:
        _loop.close()
    asyncio.run(main(_cli, _virtual))
