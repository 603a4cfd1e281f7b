"""The instances of one component version, scaled on load.

A pool serves one (kind, package, classpath, runtime): every job using that
component version shares it. Each instance takes up to ``concurrency`` calls;
a call waits (``queued``) while all slots are taken. A scaler wakes every
``functions_scale_interval_s`` (and at once when a call has to wait):

* up, while ``instances + starting < max_capacity``, when the pool's demand
  (in flight + queued) reaches ``concurrency_scale_threshold`` of its slots,
  or an instance's memory reaches ``memory_scale_threshold`` of its limit;
  enough instances start to bring demand under the threshold;
* down, one idle instance at a time above ``min_capacity``, after demand has
  fitted in one instance fewer (under the threshold) for
  ``functions_scale_down_after_s``;
* replaced: an instance that died (crash, OOM kill, killed when hung or over
  its disk) is removed and, below ``min_capacity``, another one started.

Scale events are kept (the last 200) with the time from the trigger to the
new instance serving, which is the autoscale reaction time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from prometheus_client import Counter, Gauge

from services.functions.errors import ComponentLoadError
from services.functions.instance import CallFailed, WorkerInstance
from shared.aio import wait_event
from shared.cgroups import CgroupHost
from shared.schema.functions import FunctionComponentRuntime
from shared.settings import Settings

__all__ = ["ComponentPool", "ScaleEvent"]

log = logging.getLogger(__name__)

INSTANCES = Gauge("trajforge_function_instances", "Running worker instances, by component pool.", ["pool"])
IN_FLIGHT = Gauge("trajforge_function_in_flight", "Calls running on worker instances, by component pool.", ["pool"])
QUEUED = Gauge("trajforge_function_queued", "Calls waiting for a free instance slot, by component pool.", ["pool"])
SCALE_EVENTS = Counter("trajforge_function_scale_events_total",
                       "Instances started or removed, by component pool and direction (up, down, replace).",
                       ["pool", "direction"])
CALLS = Counter("trajforge_function_calls_total", "Component calls, by pool and outcome (ok, failed).",
                ["pool", "outcome"])


@dataclass
class ScaleEvent:
    """One instance started or removed, why, and (for a start) how long until it served."""

    direction: str
    reason: str
    at: float
    instances_after: int
    reaction_s: float | None = None


class ComponentPool:
    """Worker instances of one component version, with queueing and autoscaling."""

    def __init__(self, *, key: str, kind: str, name: str, classpath: str, runtime: FunctionComponentRuntime,
                 pythonpath: str, scratch_root: Path, cgroups: CgroupHost | None, group_parent: str,
                 settings: Settings) -> None:
        self.key, self.kind, self.name, self.classpath, self.runtime = key, kind, name, classpath, runtime
        self.pythonpath, self.scratch_root, self.settings = pythonpath, scratch_root, settings
        self._cgroups, self._group_parent = cgroups, group_parent
        self.instances: list[WorkerInstance] = []
        self.starting = 0
        self.events: deque[ScaleEvent] = deque(maxlen=200)
        self.calls = 0
        self.failed = 0
        self.last_used = time.monotonic()
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._seq = 0
        self._low_since: float | None = None
        self._wake = asyncio.Event()
        self._scaler: asyncio.Task[None] | None = None
        self._spawns: set[asyncio.Task[None]] = set()
        self._closed = False
        self.last_start_error: str | None = None

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self) -> ComponentPool:
        """Start ``capacity`` instances; ``ComponentLoadError`` when the component does not load."""
        first = await self._new_instance()
        await first.start(timeout_s=self.settings.functions_start_timeout_s)
        self.instances.append(first)
        self._event("up", "initial capacity", None)
        for _ in range(self.runtime.capacity - 1):
            self._spawn("initial capacity", time.monotonic())
        self._scaler = asyncio.create_task(self._scale_loop(), name=f"functions.scaler:{self.key}")
        self._gauges()
        return self

    async def close(self) -> None:
        """Stop every instance; waiting calls fail."""
        self._closed = True
        if self._scaler is not None:
            # The loop also ends on its own once it sees the pool closed: on Python 3.11 a cancel that
            # lands as its wait_for completes can be lost, and the scaler would tick (and spawn) forever.
            self._wake.set()
            self._scaler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scaler
        for task in list(self._spawns):
            task.cancel()
        await asyncio.gather(*self._spawns, return_exceptions=True)
        await asyncio.gather(*(i.stop(cause="pool closed") for i in self.instances), return_exceptions=True)
        self.instances.clear()
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(CallFailed("the component pool was closed"))
        for gauge in (INSTANCES, IN_FLIGHT, QUEUED):
            with contextlib.suppress(KeyError):
                gauge.remove(self.key)

    async def _new_instance(self) -> WorkerInstance:
        self._seq += 1
        name = f"{self.key}-{self._seq}"
        scratch = self.scratch_root / name
        scratch.mkdir(parents=True, exist_ok=True)
        return WorkerInstance(name=name, kind=self.kind, classpath=self.classpath, runtime=self.runtime,
                              pythonpath=self.pythonpath, scratch=scratch, cgroups=self._cgroups,
                              group_parent=self._group_parent)

    def _spawn(self, reason: str, triggered_at: float) -> None:
        if self._closed:
            return  # a closing pool starts nothing: no process could be stopped after close returns
        self.starting += 1
        task = asyncio.create_task(self._start_one(reason, triggered_at), name=f"functions.spawn:{self.key}")
        self._spawns.add(task)
        task.add_done_callback(self._spawns.discard)

    async def _start_one(self, reason: str, triggered_at: float) -> None:
        inst = await self._new_instance()
        try:
            await inst.start(timeout_s=self.settings.functions_start_timeout_s)
        except asyncio.CancelledError:  # the pool is closing mid-start: leave no process or cgroup behind
            self.starting -= 1
            await asyncio.shield(inst.stop(cause="pool closed"))
            raise
        except ComponentLoadError as exc:
            self.last_start_error = exc.message
            log.warning("instance of %s did not start: %s", self.key, exc.message)
            self.starting -= 1
            self._fail_waiters_if_stranded()
            return
        self.starting -= 1
        if self._closed:
            await inst.stop(cause="pool closed")
            return
        self.instances.append(inst)
        direction = "replace" if reason.startswith("replace") else "up"
        self._event(direction, reason, inst.ready_at - triggered_at)
        self._wake_waiters(self.runtime.concurrency)

    # ---- calls -----------------------------------------------------------------------------

    async def call(self, payload: dict[str, Any], *, timeout_s: float) -> dict[str, Any]:
        """One call on a free instance slot, within ``timeout_s`` (queueing included).

        Returns the worker's answer (``{"output": ...}`` or ``{"error": ...}``); raises
        ``CallFailed`` when there is none (timeout, crash, OOM, hang).
        """
        deadline = time.monotonic() + timeout_s
        self.calls += 1
        self.last_used = time.monotonic()
        try:
            inst = await self._acquire(deadline, timeout_s)
            try:
                answer = await inst.call(payload, timeout_s=max(0.001, deadline - time.monotonic()),
                                         cancel_grace_s=self.settings.functions_cancel_grace_s)
            finally:
                self._wake_waiters(1)
                self._gauges()
        except CallFailed:
            self.failed += 1
            CALLS.labels(self.key, "failed").inc()
            raise
        CALLS.labels(self.key, "failed" if "error" in answer else "ok").inc()
        if "error" in answer:
            self.failed += 1
        return answer

    def _free_instance(self) -> WorkerInstance | None:
        free = [i for i in self.instances if i.alive and i.load < self.runtime.concurrency]
        return min(free, key=lambda i: i.load) if free else None

    async def _acquire(self, deadline: float, timeout_s: float) -> WorkerInstance:
        while True:
            inst = self._free_instance()
            if inst is not None:
                return inst
            self._fail_waiters_if_stranded()
            if self.last_start_error and not self.instances and not self.starting:
                raise CallFailed(f"no instance can start: {self.last_start_error}")
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            self._gauges()
            self._wake.set()  # a call is waiting: let the scaler look now, not at its next tick
            try:
                await asyncio.wait_for(waiter, max(0.001, deadline - time.monotonic()))
            except TimeoutError:
                raise CallFailed(f"timeout: no instance slot free within {timeout_s:g} s") from None
            finally:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
                self._gauges()

    def _wake_waiters(self, count: int) -> None:
        while count > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                count -= 1

    def _fail_waiters_if_stranded(self) -> None:
        if self.instances or self.starting or not self.last_start_error:
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(CallFailed(f"no instance can start: {self.last_start_error}"))

    # ---- scaling ---------------------------------------------------------------------------

    def idle_for(self, now: float) -> float:
        """Seconds since the last call began, or 0 while calls run or wait."""
        return 0.0 if self.in_flight or self.queued else now - self.last_used

    @property
    def in_flight(self) -> int:
        """Calls running on instances now."""
        return sum(i.load for i in self.instances)

    @property
    def queued(self) -> int:
        """Calls waiting for a slot now."""
        return sum(1 for w in self._waiters if not w.done())

    async def _scale_loop(self) -> None:
        while not self._closed:
            await wait_event(self._wake, self.settings.functions_scale_interval_s)
            if self._closed:
                return
            self._wake.clear()
            try:
                await self.scale_once()
            except Exception:  # noqa: BLE001 - the scaler must outlive one bad tick
                log.exception("scaling %s failed", self.key)

    async def scale_once(self) -> None:
        """One look at the pool: reap the dead, enforce disk, then scale up or down."""
        now = time.monotonic()
        await self._reap()
        await self._check_disk()
        alive = [i for i in self.instances if i.alive]
        cap = self.runtime.concurrency
        demand = self.in_flight + self.queued
        total = len(alive) + self.starting
        if total < self.runtime.min_capacity:
            for _ in range(self.runtime.min_capacity - total):
                self._spawn("replace: below min_capacity", now)
            return
        threshold = self.runtime.concurrency_scale_threshold
        memory_hot = any(i.memory_bytes() >= self.runtime.memory_scale_threshold * i.limits.memory_bytes
                         for i in alive)
        slots = len(alive) * cap
        if demand and demand >= threshold * slots or memory_hot:
            wanted = max(math.ceil(demand / (threshold * cap)) if demand else 0, len(alive) + int(memory_hot))
            room = self.runtime.max_capacity - total
            reason = "memory threshold" if memory_hot else f"concurrency threshold ({demand}/{slots} slots)"
            for _ in range(max(0, min(room, wanted - total))):
                self._spawn(reason, now)
            self._low_since = None
            return
        await self._maybe_scale_down(alive, demand, threshold, now)
        self._gauges()

    async def _maybe_scale_down(self, alive: list[WorkerInstance], demand: int, threshold: float, now: float) -> None:
        fits_in_fewer = demand < threshold * (len(alive) - 1) * self.runtime.concurrency or demand == 0
        if len(alive) <= self.runtime.min_capacity or self.starting or not fits_in_fewer:
            self._low_since = None
            return
        self._low_since = self._low_since or now
        if now - self._low_since < self.settings.functions_scale_down_after_s:
            return
        idle = [i for i in alive if i.load == 0]
        if not idle:
            return
        victim = max(idle, key=lambda i: i.started_at)  # the newest: older ones have warmed caches
        self.instances.remove(victim)
        self._low_since = now  # one instance per quiet window
        self._event("down", "idle", None)
        await victim.stop(cause="scaled down")

    async def _reap(self) -> None:
        for inst in [i for i in self.instances if not i.alive]:
            self.instances.remove(inst)
            cause = inst.dead_cause or "exited"
            log.warning("instance %s of %s ended: %s", inst.name, self.key, cause)
            await inst.stop(cause=cause)
            self._event("replace", f"removed: {cause}", None)

    async def _check_disk(self) -> None:
        for inst in [i for i in self.instances if i.alive]:
            used = await asyncio.to_thread(inst.disk_bytes)
            if used > inst.limits.disk_bytes:
                await inst.kill(f"disk limit exceeded ({self.runtime.disk_size} MB)")

    def _event(self, direction: str, reason: str, reaction_s: float | None) -> None:
        alive = sum(1 for i in self.instances if i.alive)
        self.events.append(ScaleEvent(direction=direction, reason=reason, at=time.time(), instances_after=alive,
                                      reaction_s=reaction_s))
        SCALE_EVENTS.labels(self.key, direction).inc()
        self._gauges()

    def _gauges(self) -> None:
        INSTANCES.labels(self.key).set(sum(1 for i in self.instances if i.alive))
        IN_FLIGHT.labels(self.key).set(self.in_flight)
        QUEUED.labels(self.key).set(self.queued)

    def stats(self) -> dict[str, Any]:
        """The pool as ``GET /v1/functions/pools`` shows it."""
        return {"pool": self.key, "kind": self.kind, "name": self.name, "classpath": self.classpath,
                "runtime": self.runtime.model_dump(mode="json", exclude={"env"}),
                "instances": sum(1 for i in self.instances if i.alive), "starting": self.starting,
                "in_flight": self.in_flight, "queued": self.queued, "calls": self.calls, "failed": self.failed,
                "instance_memory_bytes": [i.memory_bytes() for i in self.instances if i.alive],
                "last_start_error": self.last_start_error, "events": [asdict(e) for e in self.events]}
