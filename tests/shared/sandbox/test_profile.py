"""The bubblewrap command line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shared.errors import SandboxError
from shared.sandbox.limits import SandboxLimits
from shared.sandbox.profile import HOST_ENV, program_argv, sandbox_argv


def _argv(language: str = "python") -> list[str]:
    return sandbox_argv(
        uid=23456,
        work_dir=Path("/w"),
        code_dir=Path("/c"),
        language=language,
        limits=SandboxLimits(tmpfs_bytes=8 * 1024 * 1024),
    )


def test_isolation_flags_are_present() -> None:
    argv = _argv()
    for flag in (
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--disable-userns",
    ):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert "--share-net" not in argv
    assert argv[argv.index("--size") + 1 : argv.index("--size") + 4] == [
        "8388608",
        "--tmpfs",
        "/tmp",
    ]
    assert argv[-2:] == ["-I", "/code/main.py"]


def test_drops_to_the_slot_uid_when_root() -> None:
    argv = _argv()
    if os.geteuid() == 0:
        assert (
            argv[:3] == ["setpriv", "--reuid=23456", "--regid=23456"] and "--no-new-privs" in argv
        )
    else:
        assert argv[0].endswith("bwrap")


def test_work_dir_is_writable_code_dir_read_only_and_root_remounted_read_only() -> None:
    argv = _argv()
    bind = argv.index("--bind")
    assert argv[bind : bind + 3] == ["--bind", "/w", "/workspace"]
    assert argv[argv.index("/c") - 1 : argv.index("/c") + 2] == ["--ro-bind", "/c", "/code"]
    assert argv[argv.index("--remount-ro") + 1] == "/dev"
    assert len(argv) - 1 - argv[::-1].index("--remount-ro") > bind
    last = len(argv) - 1 - argv[::-1].index("--remount-ro")
    assert argv[last + 1] == "/"


def test_languages() -> None:
    assert program_argv("bash") == (
        "main.sh",
        ["/usr/bin/bash", "--noprofile", "--norc", "/code/main.sh"],
    )
    with pytest.raises(SandboxError, match="unsupported language 'cobol'"):
        program_argv("cobol")


def test_host_env_carries_nothing_of_the_service() -> None:
    assert set(HOST_ENV) == {"PATH"}
