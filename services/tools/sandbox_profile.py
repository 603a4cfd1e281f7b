"""The bubblewrap command line of one sandbox slot.

Inside: only read-only ``/usr`` (plus the usual top-level links), a private
``/tmp`` tmpfs, fresh ``/proc`` and ``/dev``, the slot's work dir at
``/workspace`` and its code dir read-only at ``/code``. Every namespace is
unshared (so the network is a private loopback), the environment is cleared,
capabilities are dropped and nested user namespaces are refused. When the
service runs as root, ``setpriv`` first switches to the slot's own
unprivileged uid, because RLIMIT_NPROC is not enforced for root.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Literal

from services.tools.sandbox_limits import SandboxLimits
from shared.errors import SandboxError

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


def _mounts(work_dir: Path, code_dir: Path, limits: SandboxLimits) -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "lib", "lib64", "sbin"):
        if os.path.islink(f"/{name}"):
            args += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        elif os.path.isdir(f"/{name}"):
            args += ["--ro-bind", f"/{name}", f"/{name}"]
    if os.path.exists("/etc/ld.so.cache"):
        args += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    args += [
        "--size",
        str(limits.tmpfs_bytes),
        "--tmpfs",
        "/tmp",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
    ]
    args += ["--bind", str(work_dir), WORK_DIR, "--ro-bind", str(code_dir), CODE_DIR]
    # Last, so the sandbox root itself (a bwrap tmpfs) cannot be written either.
    return [*args, "--remount-ro", "/"]


def sandbox_argv(
    *, uid: int, work_dir: Path, code_dir: Path, language: str, limits: SandboxLimits
) -> list[str]:
    """Full host argv that runs the slot's code file for ``language`` in isolation."""
    _, program = program_argv(language)
    env: list[str] = ["--clearenv"]
    for key, value in _ENV.items():
        env += ["--setenv", key, value]
    isolation = [
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--disable-userns",
        "--hostname",
        "sandbox",
    ]
    tail = ["--chdir", WORK_DIR, "--", *program]
    return [
        *_privilege_drop(uid),
        bwrap_path(),
        *isolation,
        *env,
        *_mounts(work_dir, code_dir, limits),
        *tail,
    ]
