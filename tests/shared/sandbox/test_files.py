"""No-follow host reads and safe directory resets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shared.errors import UnsafeResultFile
from shared.sandbox.files import read_nofollow, recreate_dir, write_private


def test_reads_regular_files_including_nested(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "out.txt").write_bytes(b"result")
    assert read_nofollow(tmp_path, "sub/out.txt", max_bytes=100) == b"result"
    assert read_nofollow(tmp_path, "./sub//out.txt", max_bytes=100) == b"result"


@pytest.mark.parametrize(
    "name", ["leak", "dirlink/secret", "fifo", "sub", "../outside", "/etc/hostname", ""]
)
def test_refuses_links_special_files_and_escaping_paths(tmp_path: Path, name: str) -> None:
    secret_dir = tmp_path.parent / f"{tmp_path.name}-secret"
    secret_dir.mkdir()
    (secret_dir / "secret").write_text("host secret")
    (tmp_path / "leak").symlink_to(secret_dir / "secret")
    (tmp_path / "dirlink").symlink_to(secret_dir)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "sub").mkdir()
    with pytest.raises(UnsafeResultFile):
        read_nofollow(tmp_path, name, max_bytes=100)


def test_refuses_files_over_the_cap(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 101)
    with pytest.raises(UnsafeResultFile, match="over the 100-byte cap"):
        read_nofollow(tmp_path, "big", max_bytes=100)


def test_recreate_dir_removes_links_without_following_them(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    work = tmp_path / "work"
    work.mkdir()
    (work / "link").symlink_to(outside)
    (work / "nested").mkdir()
    (work / "nested" / "f").write_text("gone")
    recreate_dir(work, uid=12345, mode=0o700)
    assert list(work.iterdir()) == [] and (outside / "keep.txt").read_text() == "keep"
    assert work.stat().st_uid == (12345 if os.geteuid() == 0 else os.getuid())
    assert oct(work.stat().st_mode & 0o777) == "0o700"


def test_recreate_dir_replaces_a_symlinked_dir(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "x").write_text("x")
    (tmp_path / "work").symlink_to(target)
    recreate_dir(tmp_path / "work", uid=0)
    assert not (tmp_path / "work").is_symlink() and (target / "x").exists()


def test_write_private_refuses_a_link_in_place(tmp_path: Path) -> None:
    write_private(tmp_path, "main.py", b"print(1)")
    assert (tmp_path / "main.py").read_bytes() == b"print(1)"
    (tmp_path / "evil.py").symlink_to(tmp_path / "main.py")
    with pytest.raises(OSError):
        write_private(tmp_path, "evil.py", b"overwrite")
    assert (tmp_path / "main.py").read_bytes() == b"print(1)"
