"""Find and kill every process of a slot uid; wait until the uid is empty."""

from __future__ import annotations

import asyncio
import os
import signal
import time

__all__ = ["kill_uid", "pids_of_uid", "wait_uid_empty"]


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            # The state letter follows the parenthesised command name.
            return handle.read().rsplit(b")", 1)[1][1:2] == b"Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True


def pids_of_uid(uid: int) -> list[int]:
    """Live (non-zombie) pids whose /proc entry belongs to ``uid``.

    Zombies are skipped: a sandbox's init is reparented to the host init, which
    may take a second or two to reap it, and a zombie can run no code.
    """
    pids: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid == uid and not _is_zombie(int(entry.name)):
                pids.append(int(entry.name))
        except FileNotFoundError:
            continue
    return pids


def kill_uid(uid: int) -> int:
    """SIGKILL every process of ``uid``; returns how many were signalled."""
    if uid == 0 or uid == os.getuid():
        return 0  # never sweep our own uid (the unprivileged fallback shares it)
    count = 0
    for pid in pids_of_uid(uid):
        try:
            os.kill(pid, signal.SIGKILL)
            count += 1
        except ProcessLookupError:
            continue
    return count


async def wait_uid_empty(uid: int, *, timeout_s: float = 5.0, poll_s: float = 0.05) -> bool:
    """Kill and poll until ``uid`` owns no process (fork-bomb children linger ~1.4 s)."""
    if uid == 0 or uid == os.getuid():
        return True
    deadline = time.monotonic() + timeout_s
    while True:
        if kill_uid(uid) == 0 and not pids_of_uid(uid):
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(poll_s)
