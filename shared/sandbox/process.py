"""Run one sandboxed process: rlimits, concurrent capped output, hard wall-clock kill.

A ``RunGuard`` (the slot's cgroup and tmpfs) adds what rlimits cannot see:
the child joins the guard's cgroup before it executes anything, a watchdog
polls the guard while the run lasts, and the first limit it reports
(memory, whole-call CPU seconds, pids, disk, inodes) kills the whole group
and becomes the run's status.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Sequence
from typing import Any, Protocol

from shared.sandbox.limits import SandboxLimits, apply_rlimits
from shared.sandbox.output import encode_stream, readable, trim_partial_utf8
from shared.sandbox.result import ExecStatus, ExecutionResult

__all__ = ["RunGuard", "classify", "run_limited"]

# Watchdog poll interval. The kernel enforces each limit at once (the OOM killer,
# a refused fork, ENOSPC, the CPU quota); the watchdog only ends a call that goes
# on after one, so 100 ms bounds the overshoot (CPU: quota x 0.1 s) while a short
# call is not woken at all (dense polling cost a trivial call ~15 % on a busy host).
_POLL_S = (0.1,)


class RunGuard(Protocol):
    """What ``run_limited`` needs from a slot's containment (see ``sandbox_guard``)."""

    #: How far RLIMIT_NPROC may sit above ``max_processes`` (a pids cgroup enforces it).
    nproc_slack: int

    def join(self) -> None:
        """In the forked child, before exec: enter the slot's cgroup."""

    def begin(self) -> None:
        """Before the spawn: take the baseline of the counters."""

    def breach(self) -> ExecStatus | None:
        """The limit passed since ``begin``, if any."""

    def kill(self, *, spare: int | None = None) -> None:
        """SIGKILL every process of the run but ``spare``, wherever it moved (session, pgid)."""

    def finish(self) -> tuple[float | None, int | None]:
        """CPU seconds and peak memory bytes of the whole run."""

_CHUNK = 64 * 1024
# After a kill, how long the pipes may take to close (pid-namespace teardown).
_DRAIN_S = 3.0
# How long the outer bubblewrap gets to notice its killed child and exit by itself.
_OUTER_GRACE_S = 0.5
_SIGNAL_STATUS: dict[int, ExecStatus] = {
    signal.SIGXCPU: "cpu_limit",
    signal.SIGXFSZ: "file_size_limit",
    signal.SIGKILL: "killed",
}
_MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "xmalloc", "out of memory")
_PROCESS_MARKERS = ("Resource temporarily unavailable", "can't start new thread", "BlockingIOError")


class _Capped:
    """Reads one stream to the end, keeping at most ``cap`` bytes."""

    def __init__(self, cap: int, on_overflow: asyncio.Event) -> None:
        self.cap = cap
        self.data = bytearray()
        self.truncated = False
        self._overflow = on_overflow

    async def pump(self, stream: asyncio.StreamReader) -> None:
        """Consume ``stream``; flag overflow (the caller kills the run) past the cap."""
        while chunk := await stream.read(_CHUNK):
            if self.truncated:
                continue  # keep draining so the pipe closes once the group is killed
            room = self.cap - len(self.data)
            if len(chunk) > room:
                self.data += chunk[:room]
                self.truncated = True
                self._overflow.set()
                continue
            self.data += chunk

    def kept(self) -> bytes:
        """The kept bytes; a cap that cut a UTF-8 sequence in two drops the stub."""
        return trim_partial_utf8(bytes(self.data)) if self.truncated else bytes(self.data)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _exit_signal(returncode: int) -> int | None:
    # bwrap reports a child killed by signal N as exit code 128 + N.
    if returncode < 0:
        return -returncode
    if 128 < returncode < 128 + 65:
        return returncode - 128
    return None


def classify(*, returncode: int | None, timed_out: bool, overflow: bool, stderr: str) -> ExecStatus:
    """Map how a run ended to one status, most specific cause first."""
    if timed_out:
        return "timeout"
    if overflow:
        return "output_limit"
    if returncode == 0:
        return "ok"
    sig = _exit_signal(returncode) if returncode is not None else None
    if sig in _SIGNAL_STATUS:
        return _SIGNAL_STATUS[sig]
    if any(marker in stderr[-4096:] for marker in _MEMORY_MARKERS):
        return "memory_exceeded"
    if any(marker in stderr[-4096:] for marker in _PROCESS_MARKERS):
        return "process_limit"
    return "nonzero_exit"


async def _wait_all(proc: asyncio.subprocess.Process, pumps: list[asyncio.Task[None]]) -> None:
    await asyncio.gather(*pumps)
    await proc.wait()


async def _kill_run(proc: asyncio.subprocess.Process, guard: RunGuard | None) -> None:
    """Kill the run; with a guard, the sandbox's inside first so bubblewrap reaps its own init."""
    if guard is not None:
        guard.kill(spare=proc.pid)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(proc.wait()), _OUTER_GRACE_S)
        guard.kill()
    _kill_group(proc.pid)


async def _watch(guard: RunGuard) -> ExecStatus:
    """Poll ``guard`` until it reports a passed limit."""
    step = 0
    while True:
        await asyncio.sleep(_POLL_S[min(step, len(_POLL_S) - 1)])
        step += 1
        hit = guard.breach()
        if hit is not None:
            return hit


async def _supervise(
    proc: asyncio.subprocess.Process,
    pumps: list[asyncio.Task[None]],
    overflow: asyncio.Event,
    timeout_s: float,
    guard: RunGuard | None,
) -> tuple[bool, ExecStatus | None]:
    """Wait for the run; kill its group on timeout, overflow or a guard limit.

    Returns (timed out, the guard's limit that caused the kill).
    """
    done = asyncio.ensure_future(_wait_all(proc, pumps))
    flood = asyncio.ensure_future(overflow.wait())
    waiting: set[asyncio.Future[Any]] = {done, flood}
    watch = asyncio.ensure_future(_watch(guard)) if guard is not None else None
    if watch is not None:
        waiting.add(watch)
    finished, _ = await asyncio.wait(waiting, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    timed_out = not finished
    hit = watch.result() if watch is not None and watch in finished and done not in finished else None
    if done not in finished:
        await _kill_run(proc, guard)
        try:
            await asyncio.wait_for(asyncio.shield(done), _DRAIN_S)
        except TimeoutError:
            for pump in pumps:
                pump.cancel()
            await proc.wait()
    for extra in (flood, watch):
        if extra is not None:
            extra.cancel()
    return timed_out, hit


def _preexec(limits: SandboxLimits, guard: RunGuard | None) -> None:
    if guard is not None:
        guard.join()
    apply_rlimits(limits, nproc_slack=guard.nproc_slack if guard is not None else 0)


async def run_limited(
    argv: list[str],
    *,
    limits: SandboxLimits,
    timeout_s: float,
    env: dict[str, str] | None = None,
    guard: RunGuard | None = None,
    pass_fds: Sequence[int] = (),
) -> ExecutionResult:
    """Run ``argv`` in a new session under ``limits``; never raises for what the program does.

    Only 0, 1, 2 (and ``pass_fds``) reach the child: every other descriptor of
    the service is closed before exec.
    """
    start = time.perf_counter()
    if guard is not None:
        guard.begin()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        env=env,
        close_fds=True,
        pass_fds=tuple(pass_fds),
        preexec_fn=lambda: _preexec(limits, guard),
    )
    overflow = asyncio.Event()
    out, err = (
        _Capped(limits.max_output_bytes, overflow),
        _Capped(limits.max_output_bytes, overflow),
    )
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [
        asyncio.ensure_future(out.pump(proc.stdout)),
        asyncio.ensure_future(err.pump(proc.stderr)),
    ]
    try:
        timed_out, hit = await _supervise(proc, pumps, overflow, timeout_s, guard)
    except asyncio.CancelledError:
        _kill_group(proc.pid)  # the caller went away: the run must still die
        if guard is not None:
            guard.kill()
        raise
    return _result(proc, out, err, guard, timed_out=timed_out, hit=hit, start=start)


def _result(
    proc: asyncio.subprocess.Process,
    out: _Capped,
    err: _Capped,
    guard: RunGuard | None,
    *,
    timed_out: bool,
    hit: ExecStatus | None,
    start: float,
) -> ExecutionResult:
    stdout, stdout_encoding = encode_stream(out.kept())
    stderr, stderr_encoding = encode_stream(err.kept())
    status = classify(
        returncode=proc.returncode, timed_out=timed_out, overflow=_overflowed(out, err), stderr=readable(err.kept())
    )
    cpu_time_s: float | None = None
    memory_peak: int | None = None
    if guard is not None:
        # A limit passed by a run that ended on its own (a child OOM-killed, a
        # full tmpfs the program caught) is still the run's status.
        late = hit or (guard.breach() if status in ("ok", "nonzero_exit", "killed") else None)
        status = late or status
        cpu_time_s, memory_peak = guard.finish()
    return ExecutionResult(
        status=status,
        exit_code=proc.returncode,
        signal=_exit_signal(proc.returncode or 0),
        stdout=stdout,
        stderr=stderr,
        stdout_encoding=stdout_encoding,
        stderr_encoding=stderr_encoding,
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        duration_s=time.perf_counter() - start,
        cpu_time_s=cpu_time_s,
        memory_peak_bytes=memory_peak,
    )


def _overflowed(out: _Capped, err: _Capped) -> bool:
    """True when either stream passed the output cap."""
    return out.truncated or err.truncated
