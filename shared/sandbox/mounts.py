"""The writable storage of one slot: a capped tmpfs, fresh for every lease.

One tmpfs per slot, mounted on the host with ``size`` and ``nr_inodes``
caps, holds the three writable places of a sandbox::

    <slot>/work   ->  /workspace  (kept across the runs of one lease)
    <slot>/tmp    ->  /tmp        (emptied before every run)
    <slot>/shm    ->  /dev/shm    (emptied before every run)

Nothing else inside the sandbox is writable, and nothing of the host disk
is: a call can fill at most its own tmpfs, whose pages are charged to the
slot's memory cgroup (tmpfs pages belong to the writer's group). Releasing
the slot unmounts the tmpfs and mounts a new one, so no file survives.

Mounting needs root (``CAP_SYS_ADMIN``). An unprivileged service falls back
to a plain work dir plus bubblewrap's own size-capped ``/tmp``; ``capped``
is then False and ``trajforge sandbox check`` reports it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from shared.errors import SandboxError
from shared.sandbox.files import recreate_dir
from shared.sandbox.limits import SandboxLimits

__all__ = ["DiskUsage", "SlotStorage"]

_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH = 2
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _mount_tmpfs(target: Path, *, size: int, inodes: int) -> None:
    options = f"size={size},nr_inodes={inodes},mode=0711".encode()
    if _libc.mount(b"tmpfs", str(target).encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        err = ctypes.get_errno()
        raise SandboxError(f"cannot mount the slot tmpfs at {target}: {os.strerror(err)}")


def _umount(target: Path) -> None:
    # Detached (lazy): the slot's processes are already gone, so nothing holds the
    # tmpfs and it is freed at once; a plain umount would wait on the mount lock's
    # grace period for a few milliseconds per release.
    if _libc.umount2(str(target).encode(), _MNT_DETACH) == 0:
        return
    err = ctypes.get_errno()
    if err != 22:  # EINVAL: not a mount point (already gone)
        raise SandboxError(f"cannot unmount the slot tmpfs at {target}: {os.strerror(err)}")


@dataclass(frozen=True)
class DiskUsage:
    """How full a slot's tmpfs is."""

    used_bytes: int
    used_inodes: int
    free_bytes: int
    free_inodes: int


class SlotStorage:
    """The tmpfs (or fallback dirs) behind ``/workspace``, ``/tmp`` and ``/dev/shm``."""

    def __init__(self, root: Path, *, uid: int, limits: SandboxLimits) -> None:
        self.root = root
        self.uid = uid
        self.limits = limits
        self.capped = os.geteuid() == 0
        self.work_dir = root / "work"
        self.tmp_dir = root / "tmp"
        self.shm_dir = root / "shm"
        self._mounted = False
        self._baseline_inodes = 0

    def fresh(self) -> None:
        """Unmount what was there and start from an empty capped tmpfs."""
        if not self.root.exists():
            self.root.mkdir(mode=0o711)
        if self.capped:
            if self._mounted:
                _umount(self.root)
                self._mounted = False
            _mount_tmpfs(self.root, size=self.limits.tmpfs_bytes, inodes=self.limits.tmpfs_inodes)
            self._mounted = True
            os.chmod(self.root, 0o711)
        for path in (self.work_dir, self.tmp_dir, self.shm_dir):
            recreate_dir(path, uid=self.uid, mode=0o700)
        self._baseline_inodes = self.usage().used_inodes if self.capped else 0

    def clear_scratch(self) -> None:
        """Empty ``/tmp`` and ``/dev/shm`` between two runs of one lease."""
        for path in (self.tmp_dir, self.shm_dir):
            with os.scandir(path) as entries:
                if next(entries, None) is None:
                    continue
            recreate_dir(path, uid=self.uid, mode=0o700)

    def usage(self) -> DiskUsage:
        """Bytes and inodes used and left on the slot's tmpfs."""
        st = os.statvfs(self.root)
        return DiskUsage(
            used_bytes=(st.f_blocks - st.f_bfree) * st.f_frsize,
            used_inodes=st.f_files - st.f_ffree,
            free_bytes=st.f_bavail * st.f_frsize,
            free_inodes=st.f_favail,
        )

    def leftover_entries(self) -> int:
        """Files and dirs beyond the fresh layout (0 right after ``fresh()``)."""
        if self.capped:
            return max(0, self.usage().used_inodes - self._baseline_inodes)
        return sum(len(os.listdir(path)) for path in (self.work_dir, self.tmp_dir, self.shm_dir))

    def hit_limit(self) -> str | None:
        """``disk_limit`` or ``inode_limit`` when the tmpfs is full, else None."""
        if not self.capped:
            return None
        now = self.usage()
        # A tmpfs cannot fill its very last block for metadata: one page left is full.
        if now.free_bytes <= 4096:
            return "disk_limit"
        if now.free_inodes == 0:
            return "inode_limit"
        return None

    def destroy(self) -> None:
        """Unmount and remove the slot's storage."""
        if self._mounted:
            _umount(self.root)
            self._mounted = False
        if self.root.exists():
            shutil.rmtree(self.root)
