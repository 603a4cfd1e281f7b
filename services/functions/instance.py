"""One worker instance: a child process with its own cgroup, scratch dir and environment.

The instance speaks the worker protocol (``services.functions.worker``) over
its stdin and stdout. Limits: a cgroup per instance caps memory (the kernel's
OOM killer fires inside it), CPU (CFS quota of ``cpu`` cores) and processes;
``RLIMIT_FSIZE`` and a usage check of the scratch dir bound disk. Without a
writable cgroup hierarchy the memory cap falls back to ``RLIMIT_AS``.

When the process dies (crash, OOM kill, killed after a hang or for disk use)
every call still in flight fails with the cause, which the pool reports as
that call's FAILED status.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import resource
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.functions.errors import ComponentLoadError
from shared.cgroups import CgroupHost, SlotCgroup
from shared.schema.functions import FunctionComponentRuntime

__all__ = ["CallFailed", "InstanceLimits", "WorkerInstance"]

log = logging.getLogger(__name__)

_LINE_LIMIT = 64 * 1024 * 1024
_MB = 1024 * 1024
#: Processes (and threads) one instance may hold: enough for thread pools, not for a fork bomb.
_MAX_PROCESSES = 512
_STDERR_TAIL = 2000


class CallFailed(Exception):
    """A call did not produce an answer; the message is the cause reported to the caller."""


@dataclass(frozen=True)
class InstanceLimits:
    """What the instance's cgroup is capped at (``shared.cgroups.GroupLimits``)."""

    cpu_cores: float
    memory_bytes: int
    max_processes: int
    disk_bytes: int

    @classmethod
    def of(cls, runtime: FunctionComponentRuntime) -> InstanceLimits:
        """The limits a component runtime asks for."""
        return cls(cpu_cores=runtime.cpu, memory_bytes=runtime.memory_size * _MB, max_processes=_MAX_PROCESSES,
                   disk_bytes=runtime.disk_size * _MB)


def _worker_env(runtime: FunctionComponentRuntime, pythonpath: str, scratch: Path) -> dict[str, str]:
    """The child's whole environment: nothing of the service's own (no keys, no database URL)."""
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": os.environ.get("LANG", "C.UTF-8"),
            "HOME": str(scratch), "TMPDIR": str(scratch / "tmp"), "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1"}
    return {**base, **runtime.env, "PYTHONPATH": pythonpath}


def _preexec(procs_files: list[str], limits: InstanceLimits, *, rlimit_memory: bool) -> Any:
    """Runs in the child before exec: join the cgroup, then set the rlimits."""

    def setup() -> None:
        pid = str(os.getpid()).encode()
        for path in procs_files:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.disk_bytes, limits.disk_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if rlimit_memory:
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))

    return setup


class WorkerInstance:
    """A started worker process and the calls in flight on it."""

    def __init__(self, *, name: str, kind: str, classpath: str, runtime: FunctionComponentRuntime,
                 pythonpath: str, scratch: Path, cgroups: CgroupHost | None, group_parent: str) -> None:
        self.name, self.kind, self.classpath, self.runtime = name, kind, classpath, runtime
        self.pythonpath, self.scratch = pythonpath, scratch
        self.limits = InstanceLimits.of(runtime)
        self._host, self._parent = cgroups, group_parent
        self.cgroup: SlotCgroup | None = None
        self.proc: asyncio.subprocess.Process | None = None
        self.inflight: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.started_at = 0.0
        self.ready_at = 0.0
        self.dead_cause: str | None = None
        self._next_id = 0
        self._reader: asyncio.Task[None] | None = None
        self._write_lock = asyncio.Lock()
        self._killed_for: str | None = None

    @property
    def alive(self) -> bool:
        """True while the process runs and has not been condemned."""
        return self.proc is not None and self.proc.returncode is None and self.dead_cause is None

    @property
    def load(self) -> int:
        """Calls in flight on this instance."""
        return len(self.inflight)

    async def start(self, *, timeout_s: float) -> None:
        """Spawn the worker and wait for ``ready``; ``ComponentLoadError`` when the class does not load."""
        self.started_at = time.monotonic()
        (self.scratch / "tmp").mkdir(parents=True, exist_ok=True)
        procs_files: list[str] = []
        if self._host is not None:
            self.cgroup = await asyncio.to_thread(SlotCgroup.create, self._host, parent=self._parent,
                                                  name=self.name, limits=self.limits)
            procs_files = self.cgroup.procs_files
        rlimit_memory = self.cgroup is None or "memory" not in self.cgroup.dirs
        stderr = open(self.scratch.parent / f"{self.name}.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "services.functions.worker", self.kind, self.classpath,
                str(self.runtime.concurrency), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=stderr, cwd=self.scratch, env=_worker_env(self.runtime, self.pythonpath, self.scratch),
                start_new_session=True, limit=_LINE_LIMIT,
                preexec_fn=_preexec(procs_files, self.limits, rlimit_memory=rlimit_memory))
        finally:
            stderr.close()
        try:
            first = await asyncio.wait_for(self._read_message(), timeout_s)
        except (TimeoutError, CallFailed) as exc:
            cause = f"did not start within {timeout_s} s" if isinstance(exc, TimeoutError) else str(exc)
            await self.stop(cause=cause)
            raise ComponentLoadError(f"{self.classpath}: the worker {cause}", param="fcmodel.classpath") from None
        if "load_error" in first:
            await self.stop(cause="load error")
            raise ComponentLoadError(f"{self.classpath} does not load: {first['load_error']}",
                                     param="fcmodel.classpath")
        self.ready_at = time.monotonic()
        self._reader = asyncio.create_task(self._read_loop(), name=f"functions.reader:{self.name}")

    async def _read_message(self) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            line = await self.proc.stdout.readline()
        except (ValueError, asyncio.LimitOverrunError) as exc:
            raise CallFailed(f"answer too large: {exc}") from exc
        if not line:
            await self.proc.wait()
            raise CallFailed(self._death_cause())
        message: dict[str, Any] = json.loads(line)
        return message

    async def _read_loop(self) -> None:
        try:
            while True:
                message = await self._read_message()
                future = self.inflight.pop(int(message.get("id", -1)), None)
                if future is not None and not future.done():
                    future.set_result(message)
        except CallFailed as exc:
            self._fail_all(str(exc))
        except Exception as exc:  # noqa: BLE001 - a garbled stream ends the instance, never the pool
            self._fail_all(f"protocol error: {type(exc).__name__}: {exc}")
            await self.kill(f"protocol error: {exc}")

    def _fail_all(self, cause: str) -> None:
        self.dead_cause = self.dead_cause or cause
        for future in self.inflight.values():
            if not future.done():
                future.set_exception(CallFailed(cause))
                future.exception()  # a timed-out caller no longer awaits it: do not log it as unretrieved
        self.inflight.clear()

    def _death_cause(self) -> str:
        """Why the process ended, in words: the kill reason, an OOM kill, a signal, or its exit code."""
        if self._killed_for:
            return self._killed_for
        code = self.proc.returncode if self.proc is not None else None
        if self.cgroup is not None and self.cgroup.usage().oom_kills > 0:
            return f"memory limit exceeded ({self.runtime.memory_size} MB): the worker was killed"
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            return f"worker crashed ({name}){self._stderr_tail()}"
        return f"worker exited with code {code}{self._stderr_tail()}"

    def _stderr_tail(self) -> str:
        path = self.scratch.parent / f"{self.name}.log"
        try:
            with open(path, "rb") as handle:
                handle.seek(max(0, path.stat().st_size - _STDERR_TAIL))
                lines = handle.read().decode(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return f": {lines[-1]}" if lines else ""

    async def call(self, payload: dict[str, Any], *, timeout_s: float, cancel_grace_s: float) -> dict[str, Any]:
        """Send one input; the worker's answer (``output`` or ``error``), or ``CallFailed`` with the cause.

        On timeout the call is cancelled in the worker; a worker that does not let go within
        ``cancel_grace_s`` is hung (a blocking call on its event loop) and is killed.
        """
        if not self.alive or self.proc is None or self.proc.stdin is None:
            raise CallFailed(self.dead_cause or "instance is not running")
        self._next_id += 1
        rid = self._next_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.inflight[rid] = future
        try:
            await self._send({"id": rid, "input": payload})
            return await asyncio.wait_for(asyncio.shield(future), timeout_s)
        except TimeoutError:
            await self._cancel(rid, future, cancel_grace_s)
            raise CallFailed(f"timeout: no answer within {timeout_s:g} s") from None
        finally:
            self.inflight.pop(rid, None)

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        async with self._write_lock:
            try:
                self.proc.stdin.write(json.dumps(message).encode() + b"\n")
                await self.proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise CallFailed(self.dead_cause or f"worker gone: {exc}") from exc

    async def _cancel(self, rid: int, future: asyncio.Future[dict[str, Any]], grace_s: float) -> None:
        with contextlib.suppress(CallFailed):
            await self._send({"cancel": rid})
        try:
            await asyncio.wait_for(asyncio.shield(future), grace_s)
        except (TimeoutError, CallFailed):
            if not future.done():
                await self.kill(f"worker hung: a call did not stop within {grace_s:g} s of its timeout")

    def memory_bytes(self) -> int:
        """Memory charged to the instance now (its cgroup, else the process's resident set)."""
        if self.cgroup is not None and "memory" in self.cgroup.dirs:
            return self.cgroup.memory_bytes()
        if self.proc is None:
            return 0
        try:
            pages = int(Path(f"/proc/{self.proc.pid}/statm").read_text().split()[1])
        except (OSError, ValueError, IndexError):
            return 0
        return pages * os.sysconf("SC_PAGE_SIZE")

    def disk_bytes(self) -> int:
        """Bytes of files under the scratch dir."""
        total = 0
        for root, _, files in os.walk(self.scratch):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(root, name)).st_size
        return total

    async def kill(self, cause: str) -> None:
        """Kill the process (and its group); in-flight calls fail with ``cause``."""
        self._killed_for = self._killed_for or cause
        self.dead_cause = self.dead_cause or cause
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        if self.cgroup is not None:
            await asyncio.to_thread(self.cgroup.kill)
        self._fail_all(cause)

    async def stop(self, *, cause: str = "stopped", grace_s: float = 5.0) -> None:
        """Close stdin (the worker ends after its running calls), kill after ``grace_s``, free the cgroup."""
        self.dead_cause = self.dead_cause or cause
        if self.proc is not None:
            if self.proc.stdin is not None and not self.proc.stdin.is_closing():
                self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), grace_s)
            except TimeoutError:
                self._killed_for = self._killed_for or cause
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                await self.proc.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        self._fail_all(cause)
        if self.cgroup is not None:
            await asyncio.to_thread(self.cgroup.destroy)
        await asyncio.to_thread(shutil.rmtree, self.scratch, True)
