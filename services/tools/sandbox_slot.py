"""One pre-created sandbox slot: its own uid, work dir and code dir."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

from services.tools.results import ExecutionResult
from services.tools.sandbox_files import read_nofollow, recreate_dir, write_private
from services.tools.sandbox_limits import SandboxLimits, clamp_timeout
from services.tools.sandbox_process import run_limited
from services.tools.sandbox_profile import HOST_ENV, program_argv, sandbox_argv
from services.tools.sandbox_reaper import wait_uid_empty
from services.tools.sandbox_uids import UidLease
from shared.errors import SandboxError

__all__ = ["SandboxSlot"]

log = logging.getLogger(__name__)


class SandboxSlot:
    """A leased sandbox. State in ``/workspace`` lasts until the slot is released."""

    def __init__(self, *, index: int, lease: UidLease, root: Path, limits: SandboxLimits) -> None:
        self.index = index
        self.uid = lease.uid
        self.limits = limits
        self.work_dir = root / f"slot-{index}-work"
        self.code_dir = root / f"slot-{index}-code"
        self.broken = False
        self._lease = lease

    def prepare(self) -> None:
        """Create the empty work dir (owned by the slot uid) and the host-owned code dir."""
        recreate_dir(self.work_dir, uid=self.uid, mode=0o700)
        recreate_dir(self.code_dir, uid=0, mode=0o755)

    async def run(
        self, code: str, *, language: str = "python", timeout_s: float | None = None
    ) -> ExecutionResult:
        """Run python or bash ``code`` in isolation; a bad program is a status, not an exception."""
        file_name, _ = program_argv(language)
        write_private(self.code_dir, file_name, code.encode("utf-8", errors="replace"))
        argv = sandbox_argv(
            uid=self.uid,
            work_dir=self.work_dir,
            code_dir=self.code_dir,
            language=language,
            limits=self.limits,
        )
        timeout = clamp_timeout(timeout_s, default=self.limits.timeout_s)
        try:
            result = await run_limited(argv, limits=self.limits, timeout_s=timeout, env=HOST_ENV)
        except (OSError, subprocess.SubprocessError) as exc:
            self.broken = True  # the sandbox could not even be spawned
            return ExecutionResult(status="sandbox_error", stderr=f"sandbox failed to start: {exc}")
        if result.exit_code == 1 and result.stderr.startswith("bwrap:"):
            # bwrap itself could not build the sandbox: the slot is unusable.
            self.broken = True
            return result.model_copy(update={"status": "sandbox_error"})
        return result

    def read_file(self, relative: str, *, max_bytes: int = 1024 * 1024) -> bytes:
        """A result file from ``/workspace``, read without following links, size capped."""
        return read_nofollow(self.work_dir, relative, max_bytes=max_bytes)

    async def reset(self) -> bool:
        """Kill leftovers, wait until the uid is empty, wipe the dirs. False if that failed."""
        if not await wait_uid_empty(self.uid):
            log.warning("sandbox slot %d: uid %d still has processes", self.index, self.uid)
            return False
        try:
            self.prepare()
        except OSError as exc:
            log.warning("sandbox slot %d: reset failed: %s", self.index, exc)
            return False
        return not self.broken

    async def destroy(self) -> None:
        """Kill everything, remove the dirs and give the uid back."""
        await wait_uid_empty(self.uid)
        for path in (self.work_dir, self.code_dir):
            try:
                recreate_dir(path, uid=0)
                path.rmdir()
            except OSError as exc:
                raise SandboxError(
                    f"cannot remove sandbox dir of slot {self.index}: {exc}"
                ) from exc
        self._lease.release()
