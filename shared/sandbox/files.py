"""Host-side file access to sandbox work dirs that never follows a planted link."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from shared.errors import UnsafeResultFile

__all__ = ["read_nofollow", "recreate_dir", "write_private"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _parts(relative: str) -> list[str]:
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if not parts or relative.startswith("/") or ".." in parts:
        raise UnsafeResultFile(f"refusing path {relative!r}: give a relative path without '..'")
    return parts


def _open_beneath(root: Path, parts: list[str]) -> int:
    """Open ``root/parts`` one component at a time, refusing links at every step."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        return os.open(
            parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd
        )
    finally:
        os.close(fd)


def read_nofollow(root: Path, relative: str, *, max_bytes: int) -> bytes:
    """Bytes of a regular file under ``root``; links, FIFOs, devices and oversize files refused."""
    try:
        fd = _open_beneath(root, _parts(relative))
    except OSError as exc:
        raise UnsafeResultFile(f"cannot open {relative!r} safely: {exc.strerror}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeResultFile(f"{relative!r} is not a regular file")
        if info.st_size > max_bytes:
            raise UnsafeResultFile(
                f"{relative!r} is {info.st_size} bytes, over the {max_bytes}-byte cap"
            )
        return os.read(fd, max_bytes + 1)[:max_bytes]
    finally:
        os.close(fd)


def recreate_dir(path: Path, *, uid: int, mode: int = 0o700) -> None:
    """Delete ``path`` without following links inside, then recreate it empty, owned by ``uid``."""
    if path.is_symlink():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)  # fd-based on Linux: links inside are removed, not followed
    path.mkdir(mode=mode)
    os.chmod(path, mode)
    if os.geteuid() == 0:
        os.chown(path, uid, uid)


def write_private(directory: Path, name: str, data: bytes) -> None:
    """Write ``directory/name`` (a host-owned dir) without following a link in its place."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(directory / name, flags, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
