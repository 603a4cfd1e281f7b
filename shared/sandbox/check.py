"""Which sandbox protections are active on this host, measured from inside a sandbox.

``check_protections(pool)`` runs one probe program in a slot of a started
pool and reads back what the program itself saw: its uid and uid map, the
type and caps of its writable mounts, the descriptors it holds, and the
errno of refused system calls. Each protection is reported active only on
that evidence (plus the pool's cgroup layout), never on configuration alone.

With ``TRAJFORGE_ENV=prod`` a pool built by ``SandboxPool.from_settings``
refuses to start when any protection is missing (``require_protections``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from shared.cgroups import CONTROLLERS
from shared.errors import SandboxError
from shared.sandbox.seccomp import syscall_number

if TYPE_CHECKING:
    from shared.sandbox.pool import SandboxPool

__all__ = ["PROTECTIONS", "Protection", "check_protections", "format_table", "require_protections"]

PROTECTIONS: tuple[str, ...] = (
    "user namespaces",
    "uid per slot",
    "cgroups",
    "seccomp",
    "capped tmpfs",
    "no inherited fds",
)

_PROBE = """
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
def errno_of(nr, *args):
    ctypes.set_errno(0)
    return 0 if libc.syscall(nr, *args) >= 0 else ctypes.get_errno()
fds = []
for fd in range(3, 1024):
    try:
        os.fstat(fd)
        fds.append(fd)
    except OSError:
        pass
mounts = {}
for line in open("/proc/self/mountinfo"):
    left, _, right = line.partition(" - ")
    mounts[left.split()[4]] = right.split()[0] + " " + right.split()[2]
print(json.dumps({"uid": os.getuid(), "uid_map": open("/proc/self/uid_map").read().split(),
                  "fds": fds, "keyctl": errno_of(%(keyctl)d, 0, 0, 0), "io_uring": errno_of(%(io_uring)d, 1, 0),
                  "mounts": mounts}))
"""


class Protection(BaseModel):
    """One row of ``trajforge sandbox check``."""

    name: str
    active: bool
    detail: str


def _probe_code() -> str:
    return _PROBE % {"keyctl": syscall_number("keyctl"), "io_uring": syscall_number("io_uring_setup")}


def _tmpfs_row(mounts: dict[str, str]) -> Protection:
    wanted = ("/workspace", "/tmp", "/dev/shm")
    capped = [m for m in wanted if m in mounts and "size=" in mounts[m] and "nr_inodes=" in mounts[m]]
    if len(capped) == len(wanted):
        options = mounts["/workspace"].split()[1]
        caps = ",".join(o for o in options.split(",") if o.startswith(("size=", "nr_inodes=")))
        return Protection(name="capped tmpfs", active=True, detail=f"/workspace, /tmp, /dev/shm on one tmpfs ({caps})")
    missing = [m for m in wanted if m not in capped]
    return Protection(
        name="capped tmpfs", active=False,
        detail=f"{', '.join(missing)} not on a size- and inode-capped tmpfs (mounting one needs root)",
    )


def _rows(pool: SandboxPool, seen: dict[str, Any], slot_uid: int) -> list[Protection]:
    uid_map = seen["uid_map"]
    userns = len(uid_map) == 3 and uid_map[2] != "4294967295"
    userns_detail = f"own user namespace (uid_map {' '.join(uid_map)})" if userns else "host user namespace"
    rows = [
        Protection(name="user namespaces", active=userns, detail=userns_detail),
        Protection(name="uid per slot", active=slot_uid != 0 and len({s.uid for s in pool.slots()}) == pool.pool_size,
                   detail=f"slot uids from {pool.uid_base}, uid {seen['uid']} inside" if slot_uid != 0 else
                   "slots share the service's uid (run the service as root to give each slot its own)"),
    ]
    host = pool.cgroups
    if host is not None and not host.missing:
        rows.append(Protection(name="cgroups", active=True,
                               detail=f"v{host.version}: {', '.join(CONTROLLERS)} per slot"))
    else:
        gone = host.missing if host is not None else list(CONTROLLERS)
        rows.append(Protection(name="cgroups", active=False,
                               detail=f"no writable cgroup for {', '.join(gone)}: only rlimits apply"))
    eperm = seen["keyctl"] == 1 and seen["io_uring"] == 1
    rows.append(Protection(name="seccomp", active=eperm,
                           detail="keyctl and io_uring_setup refused with EPERM" if eperm else
                           f"keyctl errno {seen['keyctl']}, io_uring_setup errno {seen['io_uring']} (not filtered)"))
    rows.append(_tmpfs_row(seen["mounts"]))
    rows.append(Protection(name="no inherited fds", active=not seen["fds"],
                           detail="only 0, 1, 2 open inside" if not seen["fds"] else f"extra fds {seen['fds']}"))
    return rows


async def check_protections(pool: SandboxPool) -> list[Protection]:
    """Probe a started pool; one row per protection in ``PROTECTIONS`` order."""
    async with pool.session() as slot:
        result = await slot.run(_probe_code(), language="python", timeout_s=10)
        uid = slot.uid
    if not result.ok:
        reason = f"the probe sandbox did not run ({result.status}): {result.stderr_text[-300:]}"
        return [Protection(name=name, active=False, detail=reason) for name in PROTECTIONS]
    return _rows(pool, json.loads(result.stdout_text), uid)


def require_protections(rows: list[Protection], *, service: str = "the sandbox pool") -> None:
    """Raise SandboxError naming every missing protection and why."""
    missing = [row for row in rows if not row.active]
    if missing:
        reasons = "; ".join(f"{row.name}: {row.detail}" for row in missing)
        raise SandboxError(
            f"refusing to start {service} with TRAJFORGE_ENV=prod: missing sandbox protection(s): {reasons}"
        )


def format_table(rows: list[Protection]) -> str:
    """The rows as a fixed-width text table."""
    width = max(len(row.name) for row in rows)
    lines = [f"{'protection':<{width}}  {'status':<8}  detail", f"{'-' * width}  {'-' * 8}  {'-' * 40}"]
    lines += [f"{row.name:<{width}}  {'active' if row.active else 'MISSING':<8}  {row.detail}" for row in rows]
    return "\n".join(lines)
