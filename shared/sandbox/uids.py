"""Hand out slot uids that no other pool, in this or another process, is using."""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

from shared.errors import SandboxError
from shared.sandbox.reaper import pids_of_uid

__all__ = ["UidLease", "lease_uid"]

_SEARCH_SPAN = 4096


class UidLease:
    """An exclusive claim on one uid, held by an open locked file until ``release()``."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid = uid
        self._fd = fd

    def release(self) -> None:
        """Give the uid back (closing the file drops the lock)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _lock_dir() -> Path:
    path = Path(tempfile.gettempdir()) / "trajforge-sandbox-uids"
    path.mkdir(mode=0o755, exist_ok=True)
    return path


def _try_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _owns_keys(uid: int) -> bool:
    try:
        with open("/proc/key-users", encoding="ascii") as handle:
            return any(line.partition(":")[0].strip() == str(uid) for line in handle)
    except OSError:
        return False


def lease_uid(base: int) -> UidLease:
    """The first free uid at or above ``base`` (not locked, owning no process)."""
    if os.geteuid() != 0:
        return UidLease(os.getuid(), -1)  # unprivileged service: every slot shares our uid
    lock_dir = _lock_dir()
    for uid in range(base, base + _SEARCH_SPAN):
        fd = _try_lock(lock_dir / f"{uid}.lock")
        if fd is None:
            continue
        if pids_of_uid(uid) or _owns_keys(uid):
            os.close(fd)  # a process or a kernel key of a previous owner would be inherited
            continue
        return UidLease(uid, fd)
    raise SandboxError(f"no free sandbox uid in [{base}, {base + _SEARCH_SPAN})")
