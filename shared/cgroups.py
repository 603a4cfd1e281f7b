"""A control group per isolated unit (a sandbox slot, a function worker): memory, pids and CPU capped.

rlimits are per process, so a call that spreads over many processes, or
that holds memory ``RLIMIT_AS`` never sees (tmpfs and ``/dev/shm`` pages,
memfd, pipe buffers, other kernel memory), escapes them. A cgroup counts all
of that for every process of the call together:

* memory: the limit covers anonymous memory, page cache including tmpfs,
  shm and memfd pages, and kernel memory (pipe buffers, slabs; cgroup v1 on
  kernels >= 5 charges kmem to the same counter). Over the limit the kernel's
  OOM killer fires inside the group, which this module reads as
  ``oom_kill`` events.
* pids: ``pids.max``; ``pids.events`` counts forks refused at the limit.
* cpu: a CFS quota (cores) and the group's total CPU time (``cpuacct`` on v1,
  ``cpu.stat`` on v2), so a CPU-seconds budget covers the whole call.

cgroup v1 (one hierarchy per controller, as on these hosts) and v2 (one
unified tree) are both supported. Slot groups live below the service's own
group in each hierarchy, so the service's own limits still bound them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from shared.errors import SandboxError

__all__ = [
    "CONTROLLERS",
    "CgroupHost",
    "CgroupUsage",
    "GroupLimits",
    "SlotCgroup",
    "detect_cgroups",
    "pool_group_name",
]

CONTROLLERS: tuple[str, ...] = ("memory", "pids", "cpu", "cpuacct")
_CFS_PERIOD_US = 100_000


class GroupLimits(Protocol):
    """What a group is capped at (``SandboxLimits`` and the function runtime both provide it)."""

    @property
    def cpu_cores(self) -> float: ...
    @property
    def memory_bytes(self) -> int: ...
    @property
    def max_processes(self) -> int: ...


@dataclass(frozen=True)
class CgroupHost:
    """Where this process may create sandbox groups: version and one dir per controller."""

    version: Literal[1, 2]
    #: v1: controller -> this process's own group dir in that hierarchy; v2: every
    #: controller -> the same unified dir.
    dirs: dict[str, Path]

    @property
    def missing(self) -> list[str]:
        """Controllers this host cannot give a sandbox group."""
        return [name for name in CONTROLLERS if name not in self.dirs]


@dataclass
class CgroupUsage:
    """Counters of one group; subtract two snapshots to get one call's share."""

    cpu_ns: int = 0
    oom_kills: int = 0
    pids_refused: int = 0
    memory_peak_bytes: int = 0

    def since(self, before: CgroupUsage) -> CgroupUsage:
        """What changed after ``before`` (the peak is not a counter and is kept)."""
        return CgroupUsage(
            cpu_ns=self.cpu_ns - before.cpu_ns,
            oom_kills=self.oom_kills - before.oom_kills,
            pids_refused=self.pids_refused - before.pids_refused,
            memory_peak_bytes=self.memory_peak_bytes,
        )


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, super options) of every cgroup mount."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                found.append((fields[4], tail[0], set(tail[2].split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """Controller (or ``""`` for the unified tree) -> this process's group path."""
    paths: dict[str, str] = {}
    with open("/proc/self/cgroup", encoding="utf-8") as handle:
        for line in handle:
            _, names, path = line.rstrip("\n").split(":", 2)
            for name in names.split(",") if names else [""]:
                paths[name] = path
    return paths


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


def _detect_v2(mount: str, own: str) -> CgroupHost | None:
    base = Path(mount) / own.lstrip("/")
    try:
        available = set((base / "cgroup.controllers").read_text().split())
    except OSError:
        return None
    wanted = {"memory", "pids", "cpu"} & available
    if not wanted or not _writable(base):
        return None
    dirs = {name: base for name in wanted}
    if "cpu" in wanted:
        dirs["cpuacct"] = base  # v2 accounts CPU time in the cpu controller's cpu.stat
    return CgroupHost(version=2, dirs=dirs)


def detect_cgroups() -> CgroupHost | None:
    """The cgroup layout usable by this process, or None (no cgroups, or not writable)."""
    try:
        mounts, own = _mounts(), _own_paths()
    except OSError:
        return None
    v1: dict[str, Path] = {}
    for point, fstype, options in mounts:
        for name in CONTROLLERS:
            if fstype == "cgroup" and name in options and name in own:
                candidate = Path(point) / own[name].lstrip("/")
                if _writable(candidate):
                    v1.setdefault(name, candidate)
    if v1:
        return CgroupHost(version=1, dirs=v1)
    for point, fstype, _ in mounts:
        if fstype == "cgroup2" and "" in own:
            found = _detect_v2(point, own[""])
            if found is not None:
                return found
    return None


def _write(path: Path, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def _read_key(path: Path, key: str) -> int:
    """The integer after ``key`` in a flat-keyed cgroup file (``oom_kill 3``)."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _enable_v2_subtree(parent: Path) -> None:
    """Let ``parent``'s children use memory/pids/cpu (v2's no-internal-process rule)."""
    wanted = [name for name in ("memory", "pids", "cpu") if name in (parent / "cgroup.controllers").read_text()]
    enabled = (parent / "cgroup.subtree_control").read_text().split()
    todo = [name for name in wanted if name not in enabled]
    if todo:
        _write(parent / "cgroup.subtree_control", " ".join(f"+{name}" for name in todo))


@dataclass
class SlotCgroup:
    """The group of one slot, in every hierarchy the host offers."""

    host: CgroupHost
    name: str
    dirs: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def create(cls, host: CgroupHost, *, parent: str, name: str, limits: GroupLimits) -> SlotCgroup:
        """Make ``parent/name`` under each controller and apply ``limits``."""
        group = cls(host=host, name=name)
        try:
            for controller, base in host.dirs.items():
                top = base / parent
                if not top.exists():
                    # Two slots of one parent may start at once: the loser of the race finds it made.
                    top.mkdir(exist_ok=True)
                    if host.version == 2:
                        _enable_v2_subtree(base)
                        _enable_v2_subtree(top)
                path = top / name
                path.mkdir(exist_ok=True)
                group.dirs[controller] = path
            group.configure(limits)
        except OSError as exc:
            group.destroy()
            raise SandboxError(f"cannot create the sandbox cgroup {parent}/{name}: {exc}") from exc
        return group

    @property
    def procs_files(self) -> list[str]:
        """The distinct ``cgroup.procs`` files a new process is written into."""
        return sorted({str(path / "cgroup.procs") for path in self.dirs.values()})

    def configure(self, limits: GroupLimits) -> None:
        """Write the memory, pids and CPU quota limits."""
        quota = int(limits.cpu_cores * _CFS_PERIOD_US)
        if self.host.version == 2:
            self._set("memory", "memory.max", str(limits.memory_bytes))
            self._set("memory", "memory.swap.max", "0", optional=True)
            self._set("pids", "pids.max", str(limits.max_processes))
            self._set("cpu", "cpu.max", f"{quota} {_CFS_PERIOD_US}")
            return
        self._set("memory", "memory.limit_in_bytes", str(limits.memory_bytes))
        # memsw bounds memory + swap, so swapping out cannot get around the limit.
        self._set("memory", "memory.memsw.limit_in_bytes", str(limits.memory_bytes), optional=True)
        self._set("memory", "memory.swappiness", "0", optional=True)
        self._set("pids", "pids.max", str(limits.max_processes))
        self._set("cpu", "cpu.cfs_period_us", str(_CFS_PERIOD_US))
        self._set("cpu", "cpu.cfs_quota_us", str(quota))

    def _set(self, controller: str, file: str, value: str, *, optional: bool = False) -> None:
        if controller not in self.dirs:
            return
        try:
            _write(self.dirs[controller] / file, value)
        except OSError:
            if not optional:
                raise

    def usage(self) -> CgroupUsage:
        """The group's counters now."""
        d = self.dirs
        if self.host.version == 2:
            cpu_ns = _read_key(d["cpu"] / "cpu.stat", "usage_usec") * 1000 if "cpu" in d else 0
            memory = d.get("memory")
            return CgroupUsage(
                cpu_ns=cpu_ns,
                oom_kills=_read_key(memory / "memory.events", "oom_kill") if memory else 0,
                pids_refused=_read_key(d["pids"] / "pids.events", "max") if "pids" in d else 0,
                memory_peak_bytes=_read_int(memory / "memory.peak") if memory else 0,
            )
        return CgroupUsage(
            cpu_ns=_read_int(d["cpuacct"] / "cpuacct.usage") if "cpuacct" in d else 0,
            oom_kills=_read_key(d["memory"] / "memory.oom_control", "oom_kill") if "memory" in d else 0,
            pids_refused=_read_key(d["pids"] / "pids.events", "max") if "pids" in d else 0,
            memory_peak_bytes=_read_int(d["memory"] / "memory.max_usage_in_bytes") if "memory" in d else 0,
        )

    def memory_bytes(self) -> int:
        """Memory charged to the group right now (tmpfs pages included)."""
        if "memory" not in self.dirs:
            return 0
        file = "memory.current" if self.host.version == 2 else "memory.usage_in_bytes"
        return _read_int(self.dirs["memory"] / file)

    def shmem_bytes(self) -> int:
        """tmpfs, shm and memfd pages still charged to the group."""
        return _read_key(self.dirs["memory"] / "memory.stat", "shmem") if "memory" in self.dirs else 0

    def reset_counters(self) -> None:
        """Zero what a lease can zero (v1 CPU time, peak, fail counts); the rest is baselined."""
        if self.host.version == 1:
            self._set("cpuacct", "cpuacct.usage", "0", optional=True)
            self._set("memory", "memory.failcnt", "0", optional=True)
        self.reset_peak()

    def reset_peak(self) -> None:
        """Start a fresh memory high-water mark (v1; v2 >= 6.12 resets per writer)."""
        file = "memory.peak" if self.host.version == 2 else "memory.max_usage_in_bytes"
        self._set("memory", file, "0", optional=True)

    def procs(self) -> list[int]:
        """Every pid in the group (across hierarchies, v1 lets a process sit in some only)."""
        pids: set[int] = set()
        for path in self.dirs.values():
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(p) for p in (path / "cgroup.procs").read_text().split())
        return sorted(pids)

    def tasks(self) -> int:
        """Tasks still charged to the group, exiting ones included (``pids.current``)."""
        if "pids" in self.dirs:
            return _read_int(self.dirs["pids"] / "pids.current")
        return len(self.procs())

    def kill(self, *, spare: int | None = None) -> int:
        """SIGKILL every process of the group but ``spare``; returns how many were signalled.

        Sparing the sandbox's outer bubblewrap lets it reap the namespace's init
        itself; a killed outer process would leave that init to the host's init,
        whose reaping can lag by seconds (and the zombie still counts as a task).
        """
        if spare is None and self.host.version == 2 and "memory" in self.dirs:
            kill_file = self.dirs["memory"] / "cgroup.kill"
            if kill_file.exists():
                with contextlib.suppress(OSError):
                    _write(kill_file, "1")
        count = 0
        for pid in self.procs():
            if pid == spare:
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                count += 1
        return count

    def kill_until_empty(self, *, timeout_s: float = 5.0) -> bool:
        """Kill until no task is left, exiting ones included (pids.max bounds how many there are)."""
        deadline = time.monotonic() + timeout_s
        while self.tasks():
            self.kill()
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True

    def wait_shmem_freed(self, *, timeout_s: float = 3.0) -> bool:
        """Wait until no shared-memory page is charged (a dead IPC namespace is freed later, by a kernel worker)."""
        deadline = time.monotonic() + timeout_s
        while self.shmem_bytes():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True

    def destroy(self) -> None:
        """Kill what is left and remove the group dirs (and an emptied parent)."""
        self.kill_until_empty(timeout_s=2.0)
        for path in self.dirs.values():
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)  # the last exiting task may still be detaching
            with contextlib.suppress(OSError):
                path.parent.rmdir()  # only succeeds once the pool's last slot is gone
        self.dirs.clear()


def pool_group_name(kind: str = "sandbox") -> str:
    """A parent group name unique to one pool of one process (``kind`` says whose: sandbox, functions)."""
    return f"trajforge-{kind}-{os.getpid()}-{uuid.uuid4().hex[:8]}"

