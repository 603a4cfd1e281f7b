"""Slot uid leases and the per-uid process reaper."""

from __future__ import annotations

import asyncio
import os
import subprocess

from shared.sandbox.reaper import pids_of_uid, wait_uid_empty
from shared.sandbox.uids import lease_uid


def test_leases_are_exclusive_until_released() -> None:
    first = lease_uid(31000)
    second = lease_uid(31000)
    assert first.uid != second.uid and min(first.uid, second.uid) >= 31000
    uid = first.uid
    first.release()
    third = lease_uid(31000)
    assert third.uid == uid
    second.release()
    third.release()


async def test_reaper_kills_every_process_of_a_uid() -> None:
    lease = lease_uid(31100)
    uid = lease.uid
    try:
        argv = [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "sh",
            "-c",
            "sleep 60 & sleep 60",
        ]
        proc = subprocess.Popen(argv, start_new_session=True)
        for _ in range(100):
            if len(pids_of_uid(uid)) >= 3:
                break
            await asyncio.sleep(0.02)
        assert len(pids_of_uid(uid)) >= 2
        assert await wait_uid_empty(uid, timeout_s=3.0)
        proc.wait(timeout=3)
        assert pids_of_uid(uid) == []
    finally:
        lease.release()


async def test_reaper_never_touches_root_or_our_own_uid() -> None:
    assert await wait_uid_empty(0) and await wait_uid_empty(os.getuid())
    assert os.getpid() in pids_of_uid(os.getuid())
