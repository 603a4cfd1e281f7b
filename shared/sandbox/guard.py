"""A slot's containment during a run and the proof, after a reset, that nothing is left.

``SlotGuard`` ties one slot's cgroup and tmpfs to ``run_limited``: the child
joins the cgroup before it executes, the watchdog asks ``breach()`` which
limit (if any) was passed, and ``kill()`` ends every process of the slot.

``ResetEvidence`` is measured on the host after a release: processes of the
slot (cgroup and uid), files left on its tmpfs, shared-memory pages still
charged to its cgroup, System V IPC objects and kernel keys owned by its uid.
A reset is accepted only when every count is zero.
"""

from __future__ import annotations

import os

from pydantic import BaseModel

from shared.cgroups import CgroupUsage, SlotCgroup
from shared.sandbox.limits import SandboxLimits
from shared.sandbox.mounts import SlotStorage
from shared.sandbox.reaper import kill_uid, pids_of_uid
from shared.sandbox.result import ExecStatus

__all__ = ["ResetEvidence", "SlotGuard", "ipc_objects_of_uid", "keys_of_uid"]


def keys_of_uid(uid: int) -> int:
    """Kernel keys owned by ``uid`` (``/proc/key-users``; 0 when unreadable)."""
    try:
        with open("/proc/key-users", encoding="ascii") as handle:
            for line in handle:
                owner, _, rest = line.partition(":")
                if owner.strip() == str(uid):
                    return int(rest.split()[1].split("/")[0])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def ipc_objects_of_uid(uid: int) -> int:
    """System V shared memory, semaphores and message queues of ``uid`` in the host namespace."""
    count = 0
    for kind in ("shm", "sem", "msg"):
        try:
            with open(f"/proc/sysvipc/{kind}", encoding="ascii") as handle:
                header = handle.readline().split()
                column = header.index("uid")
                count += sum(1 for line in handle if line.split()[column : column + 1] == [str(uid)])
        except (OSError, ValueError):
            continue
    return count


class ResetEvidence(BaseModel):
    """What of a finished lease is still on the host; all zero after a good reset."""

    processes: int  # tasks of the slot's cgroup (exiting ones too), else live processes of its uid
    files: int
    shmem_bytes: int
    ipc_objects: int
    keys: int

    @property
    def clean(self) -> bool:
        """True when nothing of the lease survives."""
        return not (self.processes or self.files or self.shmem_bytes or self.ipc_objects or self.keys)


class SlotGuard:
    """The ``RunGuard`` of one slot: its cgroup (when the host has one) and its tmpfs."""

    def __init__(self, *, uid: int, limits: SandboxLimits, storage: SlotStorage, cgroup: SlotCgroup | None) -> None:
        self.uid = uid
        self.limits = limits
        self.storage = storage
        self.cgroup = cgroup
        self._procs = [os.fsencode(path) for path in cgroup.procs_files] if cgroup else []
        self._before = CgroupUsage()
        # setpriv, bwrap and its init run under the slot uid too; the pids cgroup is the real cap.
        self.nproc_slack = 8 if cgroup is not None and "pids" in cgroup.dirs else 0

    def join(self) -> None:
        """Move the calling (forked, not yet exec'd) process into the slot's cgroup."""
        pid = str(os.getpid()).encode()
        for path in self._procs:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)

    def begin(self) -> None:
        """Baseline the counters so ``breach`` and ``finish`` see this run only."""
        if self.cgroup is not None:
            self.cgroup.reset_peak()
            self._before = self.cgroup.usage()

    def breach(self) -> ExecStatus | None:
        """The first limit this run passed: memory, pids, CPU seconds, disk or inodes."""
        if self.cgroup is not None:
            used = self.cgroup.usage().since(self._before)
            if used.oom_kills > 0:
                return "memory_exceeded"
            if used.pids_refused > 0:
                return "process_limit"
            if used.cpu_ns >= self.limits.cpu_s * 1_000_000_000:
                return "cpu_limit"
        hit = self.storage.hit_limit()
        return "disk_limit" if hit == "disk_limit" else "inode_limit" if hit == "inode_limit" else None

    def kill(self, *, spare: int | None = None) -> None:
        """SIGKILL every process of the slot but ``spare``: its cgroup, else every process of its uid."""
        if self.cgroup is not None:
            self.cgroup.kill(spare=spare)
        elif spare is None:
            kill_uid(self.uid)

    def finish(self) -> tuple[float | None, int | None]:
        """CPU seconds and peak memory of the run, or (None, None) without a cgroup."""
        if self.cgroup is None:
            return None, None
        used = self.cgroup.usage().since(self._before)
        return used.cpu_ns / 1e9, used.memory_peak_bytes

    def evidence(self) -> ResetEvidence:
        """Measure on the host what is left of the slot's last lease."""
        processes: set[int] = set()
        if self.cgroup is not None:
            # No process can leave the group (cgroupfs is not mounted inside); pids.current
            # also counts tasks still exiting, which cgroup.procs no longer lists.
            count = max(self.cgroup.tasks(), len(self.cgroup.procs()))
        elif self.uid not in (0, os.getuid()):
            processes.update(pids_of_uid(self.uid))
            count = len(processes)
        else:
            count = 0
        return ResetEvidence(
            processes=count,
            files=self.storage.leftover_entries(),
            shmem_bytes=self.cgroup.shmem_bytes() if self.cgroup is not None else 0,
            ipc_objects=ipc_objects_of_uid(self.uid) if self.uid != os.getuid() else 0,
            keys=keys_of_uid(self.uid) if self.uid != os.getuid() else 0,
        )
