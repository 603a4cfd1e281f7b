"""The bubblewrap command line of one sandbox slot.

Inside: only read-only ``/usr`` (plus the usual top-level links), fresh
``/proc`` and a read-only ``/dev`` of the usual devices, and three writable
places, all on the slot's capped tmpfs (``sandbox_mounts``): ``/workspace``,
``/tmp`` and ``/dev/shm``; the code dir is read-only at ``/code``. Every
namespace is unshared (so the network is a private loopback), the
environment is cleared, capabilities are dropped, nested user namespaces are
refused and the seccomp filter of ``sandbox_seccomp`` is loaded. When the
service runs as root, ``setpriv`` first switches to the slot's own
unprivileged uid, because RLIMIT_NPROC is not enforced for root.

This one profile serves every caller that runs user code: the tools
service, the envs service's code env and rollout workers all go through
``SandboxPool``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Literal

from shared.errors import SandboxError
from shared.sandbox.limits import SandboxLimits

__all__ = [
    "CODE_DIR",
    "HOST_ENV",
    "LANGUAGES",
    "WORK_DIR",
    "Language",
    "bwrap_path",
    "program_argv",
    "sandbox_argv",
]

Language = Literal["python", "bash"]
LANGUAGES: tuple[str, ...] = ("python", "bash")
WORK_DIR = "/workspace"
CODE_DIR = "/code"
_PROGRAMS: dict[str, tuple[str, str]] = {
    "python": ("main.py", "/usr/bin/python3 -I"),
    "bash": ("main.sh", "/usr/bin/bash --noprofile --norc"),
}
# Environment of setpriv/bwrap themselves: bwrap stays pid 1 inside the sandbox,
# so its /proc/1/environ is readable there and must hold nothing of the service.
HOST_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": WORK_DIR,
    "LANG": "C.UTF-8",
    "TMPDIR": "/tmp",
}


def bwrap_path() -> str:
    """Absolute path of ``bwrap``; raises SandboxError when it is not installed."""
    found = shutil.which("bwrap")
    if not found:
        raise SandboxError("bubblewrap (bwrap) is not installed; install the 'bubblewrap' package")
    return found


def program_argv(language: str) -> tuple[str, list[str]]:
    """The code file name and the interpreter argv (inside paths) for ``language``."""
    if language not in _PROGRAMS:
        raise SandboxError(f"unsupported language {language!r}; use one of {', '.join(LANGUAGES)}")
    file_name, interpreter = _PROGRAMS[language]
    return file_name, [*interpreter.split(), f"{CODE_DIR}/{file_name}"]


def _privilege_drop(uid: int) -> list[str]:
    if os.geteuid() != 0:
        return []  # already unprivileged: bwrap maps our own uid
    return [
        "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--no-new-privs",
        "--inh-caps=-all",
        "--bounding-set=-all",
    ]


def _mounts(
    work_dir: Path, code_dir: Path, limits: SandboxLimits, tmp_dir: Path | None, shm_dir: Path | None
) -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "lib", "lib64", "sbin"):
        if os.path.islink(f"/{name}"):
            args += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        elif os.path.isdir(f"/{name}"):
            args += ["--ro-bind", f"/{name}", f"/{name}"]
    if os.path.exists("/etc/ld.so.cache"):
        args += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    if tmp_dir is not None:
        args += ["--bind", str(tmp_dir), "/tmp"]
    else:  # no capped host tmpfs (unprivileged service): bwrap's own, size-capped only
        args += ["--size", str(limits.tmpfs_bytes), "--tmpfs", "/tmp"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    if shm_dir is not None:
        args += ["--bind", str(shm_dir), "/dev/shm"]
    # bwrap's /dev is an uncapped tmpfs owned by the sandbox user: make it read-only.
    args += ["--remount-ro", "/dev"]
    args += ["--bind", str(work_dir), WORK_DIR, "--ro-bind", str(code_dir), CODE_DIR]
    # Last, so the sandbox root itself (a bwrap tmpfs) cannot be written either.
    return [*args, "--remount-ro", "/"]


def sandbox_argv(
    *,
    uid: int,
    work_dir: Path,
    code_dir: Path,
    language: str,
    limits: SandboxLimits,
    tmp_dir: Path | None = None,
    shm_dir: Path | None = None,
    seccomp_fd: int | None = None,
) -> list[str]:
    """Full host argv that runs the slot's code file for ``language`` in isolation.

    ``tmp_dir``/``shm_dir`` are the slot's capped-tmpfs dirs for ``/tmp`` and
    ``/dev/shm`` (without them ``/tmp`` is bwrap's size-capped tmpfs and
    ``/dev/shm`` is read-only); ``seccomp_fd`` is an inherited fd holding the
    BPF filter.
    """
    _, program = program_argv(language)
    env: list[str] = ["--clearenv"]
    for key, value in _ENV.items():
        env += ["--setenv", key, value]
    isolation = [
        "--unshare-all",
        "--unshare-user",
        # The program itself is the namespace's init: the outer bwrap then reaps it
        # directly, instead of leaving bwrap's own init to the host's init (slow).
        "--as-pid-1",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--disable-userns",
        "--hostname",
        "sandbox",
    ]
    if seccomp_fd is not None:
        isolation += ["--seccomp", str(seccomp_fd)]
    tail = ["--chdir", WORK_DIR, "--", *program]
    return [
        *_privilege_drop(uid),
        bwrap_path(),
        *isolation,
        *env,
        *_mounts(work_dir, code_dir, limits, tmp_dir, shm_dir),
        *tail,
    ]
