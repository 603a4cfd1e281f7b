"""One pre-created sandbox slot: its own uid, capped tmpfs, cgroup and code dir."""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import subprocess
from pathlib import Path

from shared.cgroups import CgroupHost, SlotCgroup
from shared.errors import SandboxError
from shared.sandbox.files import read_nofollow, recreate_dir, write_private
from shared.sandbox.guard import ResetEvidence, SlotGuard
from shared.sandbox.limits import SandboxLimits, clamp_timeout
from shared.sandbox.mounts import SlotStorage
from shared.sandbox.process import run_limited
from shared.sandbox.profile import HOST_ENV, program_argv, sandbox_argv
from shared.sandbox.reaper import wait_uid_empty
from shared.sandbox.result import ExecutionResult
from shared.sandbox.seccomp import filter_fd
from shared.sandbox.uids import UidLease

__all__ = ["SandboxSlot"]

log = logging.getLogger(__name__)


class SandboxSlot:
    """A leased sandbox. State in ``/workspace`` lasts until the slot is released.

    ``/tmp`` and ``/dev/shm`` are emptied before every run; releasing the slot
    kills its cgroup, remounts its tmpfs and accepts the slot back only when
    ``last_evidence`` shows nothing left.
    """

    def __init__(
        self,
        *,
        index: int,
        lease: UidLease,
        root: Path,
        limits: SandboxLimits,
        cgroups: CgroupHost | None = None,
        cgroup_parent: str = "",
        seccomp: bool = True,
    ) -> None:
        self.index = index
        self.uid = lease.uid
        self.limits = limits
        self.storage = SlotStorage(root / f"slot-{index}", uid=self.uid, limits=limits)
        self.code_dir = root / f"slot-{index}-code"
        self.cgroup = (
            SlotCgroup.create(cgroups, parent=cgroup_parent, name=f"slot-{index}", limits=limits)
            if cgroups is not None
            else None
        )
        self.guard = SlotGuard(uid=self.uid, limits=limits, storage=self.storage, cgroup=self.cgroup)
        self.seccomp = seccomp
        self.broken = False
        self.last_evidence: ResetEvidence | None = None
        self._lease = lease

    @property
    def work_dir(self) -> Path:
        """Host path of the slot's ``/workspace``."""
        return self.storage.work_dir

    def prepare(self) -> None:
        """A fresh capped tmpfs (work, tmp, shm owned by the slot uid) and an empty code dir."""
        self.storage.fresh()
        self._empty_code_dir()

    def _empty_code_dir(self) -> None:
        # The code dir is host-owned and read-only inside, so only the service ever
        # wrote to it: removing its program files is enough (a full rmtree + mkdir on
        # the host disk costs several milliseconds per release).
        try:
            info = self.code_dir.lstat()
        except FileNotFoundError:
            info = None
        if info is None or not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            recreate_dir(self.code_dir, uid=0, mode=0o755)
            return
        for name in os.listdir(self.code_dir):
            (self.code_dir / name).unlink()

    async def run(
        self, code: str, *, language: str = "python", timeout_s: float | None = None
    ) -> ExecutionResult:
        """Run python or bash ``code`` in isolation; a bad program is a status, not an exception."""
        file_name, _ = program_argv(language)
        timeout = clamp_timeout(timeout_s, default=self.limits.timeout_s)
        seccomp_fd: int | None = None
        try:
            write_private(self.code_dir, file_name, code.encode("utf-8", errors="replace"))
            self.storage.clear_scratch()
            seccomp_fd = filter_fd() if self.seccomp else None
            argv = sandbox_argv(
                uid=self.uid,
                work_dir=self.work_dir,
                code_dir=self.code_dir,
                language=language,
                limits=self.limits,
                tmp_dir=self.storage.tmp_dir if self.storage.capped else None,
                shm_dir=self.storage.shm_dir if self.storage.capped else None,
                seccomp_fd=seccomp_fd,
            )
            result = await run_limited(
                argv,
                limits=self.limits,
                timeout_s=timeout,
                env=HOST_ENV,
                guard=self.guard,
                pass_fds=() if seccomp_fd is None else (seccomp_fd,),
            )
        except (OSError, subprocess.SubprocessError) as exc:
            self.broken = True  # the sandbox could not even be spawned
            return ExecutionResult(status="sandbox_error", stderr=f"sandbox failed to start: {exc}")
        finally:
            if seccomp_fd is not None:
                os.close(seccomp_fd)
        if result.exit_code == 1 and result.stderr_text.startswith("bwrap:"):
            # bwrap itself could not build the sandbox: the slot is unusable.
            self.broken = True
            return result.model_copy(update={"status": "sandbox_error"})
        return result

    def read_file(self, relative: str, *, max_bytes: int = 1024 * 1024) -> bytes:
        """A result file from ``/workspace``, read without following links, size capped."""
        return read_nofollow(self.work_dir, relative, max_bytes=max_bytes)

    async def _kill_all(self) -> bool:
        if self.cgroup is None:
            return await wait_uid_empty(self.uid)
        # Every process of a run is in the cgroup and cannot leave it (no cgroupfs
        # inside), so the cgroup is the whole list: no /proc scan needed.
        if not self.cgroup.tasks():
            return True
        return await asyncio.to_thread(self.cgroup.kill_until_empty)

    async def reset(self) -> bool:
        """Kill leftovers, remount the tmpfs, zero the counters, then prove nothing is left."""
        if not await self._kill_all():
            log.warning("sandbox slot %d: uid %d still has processes", self.index, self.uid)
            return False
        try:
            self.prepare()
        except (OSError, SandboxError) as exc:
            log.warning("sandbox slot %d: reset failed: %s", self.index, exc)
            return False
        if self.cgroup is not None:
            self.cgroup.reset_counters()
            if self.cgroup.shmem_bytes():
                await asyncio.to_thread(self.cgroup.wait_shmem_freed)
        self.last_evidence = self.guard.evidence()
        if not self.last_evidence.clean:
            log.warning("sandbox slot %d: state survived the reset: %s", self.index, self.last_evidence)
            return False
        return not self.broken

    async def destroy(self) -> None:
        """Kill everything, unmount and remove the storage, drop the cgroup, give the uid back."""
        await self._kill_all()
        try:
            self.storage.destroy()
            recreate_dir(self.code_dir, uid=0)
            self.code_dir.rmdir()
        except OSError as exc:
            raise SandboxError(f"cannot remove sandbox dir of slot {self.index}: {exc}") from exc
        finally:
            if self.cgroup is not None:
                self.cgroup.destroy()
        self._lease.release()
