"""Run one sandboxed process: rlimits, concurrent capped output, hard wall-clock kill."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

from services.tools.results import ExecStatus, ExecutionResult
from services.tools.sandbox_limits import SandboxLimits, apply_rlimits

__all__ = ["classify", "run_limited"]

_CHUNK = 64 * 1024
# After a kill, how long the pipes may take to close (pid-namespace teardown).
_DRAIN_S = 3.0
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

    def text(self) -> str:
        """The kept bytes decoded as UTF-8 with replacement."""
        return self.data.decode("utf-8", errors="replace")


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
        return "memory_limit"
    if any(marker in stderr[-4096:] for marker in _PROCESS_MARKERS):
        return "process_limit"
    return "nonzero_exit"


async def _wait_all(proc: asyncio.subprocess.Process, pumps: list[asyncio.Task[None]]) -> None:
    await asyncio.gather(*pumps)
    await proc.wait()


async def _supervise(
    proc: asyncio.subprocess.Process,
    pumps: list[asyncio.Task[None]],
    overflow: asyncio.Event,
    timeout_s: float,
) -> bool:
    """Wait for the run; kill its process group on timeout or overflow. True if timed out."""
    done = asyncio.ensure_future(_wait_all(proc, pumps))
    flood = asyncio.ensure_future(overflow.wait())
    finished, _ = await asyncio.wait(
        {done, flood}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
    )
    timed_out = not finished
    if done not in finished:
        _kill_group(proc.pid)
        try:
            await asyncio.wait_for(asyncio.shield(done), _DRAIN_S)
        except TimeoutError:
            for pump in pumps:
                pump.cancel()
            await proc.wait()
    flood.cancel()
    return timed_out


async def run_limited(
    argv: list[str], *, limits: SandboxLimits, timeout_s: float, env: dict[str, str] | None = None
) -> ExecutionResult:
    """Run ``argv`` in a new session under ``limits``; never raises for what the program does."""
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        env=env,
        preexec_fn=lambda: apply_rlimits(limits),
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
        timed_out = await _supervise(proc, pumps, overflow, timeout_s)
    except asyncio.CancelledError:
        _kill_group(proc.pid)  # the caller went away: the run must still die
        raise
    status = classify(
        returncode=proc.returncode,
        timed_out=timed_out,
        overflow=overflow.is_set(),
        stderr=err.text(),
    )
    return ExecutionResult(
        status=status,
        exit_code=proc.returncode,
        signal=_exit_signal(proc.returncode or 0),
        stdout=out.text(),
        stderr=err.text(),
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        duration_s=time.perf_counter() - start,
    )
