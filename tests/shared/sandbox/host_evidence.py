"""Host-side evidence for the attack battery: measured before and after a call, never printed by it."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field

from shared.sandbox.guard import ipc_objects_of_uid, keys_of_uid
from shared.sandbox.pool import SandboxPool
from shared.sandbox.reaper import pids_of_uid

# Tolerances for host-wide figures other processes on this machine also move (the
# attacks that aim at them try to take far more: 1.5 GiB of disk, 100,000 inodes).
DISK_SLACK_BYTES = 1 << 30
INODE_SLACK = 20_000
SHMEM_SLACK_BYTES = 128 << 20
_TCP_LISTEN = "0A"


def _meminfo_bytes(key: str) -> int:
    with open("/proc/meminfo", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _sockets_of(uids: set[int]) -> set[str]:
    """TCP listeners and bound UDP sockets of ``uids`` in the host network namespace."""
    found: set[str] = set()
    for name in ("tcp", "tcp6", "udp", "udp6"):
        try:
            with open(f"/proc/net/{name}", encoding="ascii") as handle:
                next(handle)
                for line in handle:
                    cols = line.split()
                    listening = name.startswith("udp") or cols[3] == _TCP_LISTEN
                    if listening and int(cols[7]) in uids:
                        found.add(f"{name} {cols[1]}")
        except OSError:
            continue
    return found


def _unix_names(marker: str) -> set[str]:
    with open("/proc/net/unix", encoding="utf-8", errors="replace") as handle:
        return {line.split()[-1] for line in handle if marker in line}


def _files_of(uids: set[int], *dirs: str) -> list[str]:
    owned = []
    for directory in dirs:
        try:
            with os.scandir(directory) as entries:
                owned += [e.path for e in entries if e.stat(follow_symlinks=False).st_uid in uids]
        except OSError:
            continue
    return owned


def pool_disk_bytes(pool: SandboxPool) -> int:
    """Bytes the pool's dirs hold on the host disk itself (slot tmpfs mounts not entered)."""
    roots = {slot.storage.root.parent for slot in pool.slots()}
    total = 0
    for root in roots:
        device = root.stat().st_dev
        stack = [str(root)]
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    info = entry.stat(follow_symlinks=False)
                    if info.st_dev != device:
                        continue  # a slot's tmpfs: capped, and measured by the slot itself
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    else:
                        total += info.st_blocks * 512
    return total


def pool_cpu_ns(pool: SandboxPool) -> int:
    """CPU time ever charged to the pool's slot groups (their parent group never resets)."""
    slot = next((s for s in pool.slots() if s.cgroup is not None), None)
    if slot is None or slot.cgroup is None or "cpuacct" not in slot.cgroup.dirs:
        return 0
    parent = slot.cgroup.dirs["cpuacct"].parent
    if slot.cgroup.host.version == 2:
        for line in (parent / "cpu.stat").read_text().splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) * 1000
        return 0
    return int((parent / "cpuacct.usage").read_text())


@dataclass
class HostSnapshot:
    """What the host looks like, for the uids and cgroups of one pool."""

    disk_free: int
    inodes_free: int
    shmem: int
    pool_cpu_ns: int
    pool_disk: int
    processes: list[int] = field(default_factory=list)
    sockets: set[str] = field(default_factory=set)
    unix_names: set[str] = field(default_factory=set)
    files: list[str] = field(default_factory=list)
    keys: int = 0
    ipc: int = 0

    @classmethod
    def take(cls, pool: SandboxPool) -> HostSnapshot:
        """Measure now."""
        uids = {slot.uid for slot in pool.slots()}
        disk = os.statvfs(tempfile.gettempdir())
        processes = [pid for uid in uids for pid in pids_of_uid(uid)]
        for slot in pool.slots():
            if slot.cgroup is not None:
                processes += slot.cgroup.procs()
        return cls(
            disk_free=disk.f_bavail * disk.f_frsize,
            inodes_free=disk.f_favail,
            shmem=_meminfo_bytes("Shmem"),
            pool_cpu_ns=pool_cpu_ns(pool),
            pool_disk=pool_disk_bytes(pool),
            processes=sorted(set(processes)),
            sockets=_sockets_of(uids),
            unix_names=_unix_names("trajforge-leak"),
            files=_files_of(uids, tempfile.gettempdir(), "/dev/shm", "/var/tmp"),
            keys=sum(keys_of_uid(uid) for uid in uids),
            ipc=sum(ipc_objects_of_uid(uid) for uid in uids),
        )


def assert_contained(before: HostSnapshot, after: HostSnapshot, *, cpu_budget_s: float) -> None:
    """Nothing of the call is left on the host and no host resource moved past the slack."""
    assert after.processes == [], f"processes survived: {after.processes}"
    assert after.sockets == set(), f"host sockets opened: {after.sockets}"
    assert after.unix_names <= before.unix_names, f"host unix sockets: {after.unix_names - before.unix_names}"
    assert after.files == [], f"host files written: {after.files}"
    assert after.keys == 0 and after.ipc == 0, f"keys {after.keys}, ipc {after.ipc}"
    assert after.pool_disk <= 1 << 20, f"the pool holds {after.pool_disk} bytes of host disk"
    assert after.disk_free >= before.disk_free - DISK_SLACK_BYTES, "host disk filled"
    assert after.inodes_free >= before.inodes_free - INODE_SLACK, "host inodes used"
    assert after.shmem <= before.shmem + SHMEM_SLACK_BYTES, "host shared memory grew"
    burned = (after.pool_cpu_ns - before.pool_cpu_ns) / 1e9
    assert burned <= cpu_budget_s, f"the call burned {burned:.2f} CPU-s, over {cpu_budget_s}"
