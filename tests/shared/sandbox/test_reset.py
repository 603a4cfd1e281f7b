"""A release leaves nothing for the next call on the same slot: files, processes, IPC, keys, cgroup state."""

from __future__ import annotations

import os

import pytest

from shared.sandbox.pool import SandboxPool
from shared.sandbox.seccomp import syscall_number
from tests.shared.sandbox.conftest import small_limits

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="cgroups and capped tmpfs need a root service")

_PLANT = f"""
import ctypes, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
for path in ('/workspace/left', '/tmp/left', '/dev/shm/left'):
    open(path, 'w').write('x')
sid = libc.shmget(0x7AF0, 1 << 20, 0o1666)           # System V segment with a fixed key
print('shm', sid >= 0)
print('key', libc.syscall({syscall_number("add_key")}, b'user', b'trajforge-left', b'secret', 6, -4))
subprocess.Popen(['sleep', '60'], start_new_session=True)   # a daemon
x = bytearray(32 << 20)                                   # memory and CPU charged to the cgroup
sum(range(3_000_000))
"""

_LOOK = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print('files', [p for p in ('/workspace/left', '/tmp/left', '/dev/shm/left') if os.path.exists(p)])
print('shm', libc.shmget(0x7AF0, 0, 0))
print('key', libc.syscall({syscall_number("request_key")}, b'user', b'trajforge-left', None, -4))
print('procs', sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))
"""


async def test_nothing_of_a_lease_reaches_the_next_on_the_same_slot() -> None:
    async with SandboxPool(1, limits=small_limits(memory_bytes=128 << 20, cpu_s=5, timeout_s=10)) as pool:
        async with pool.session() as slot:
            planted = await slot.run(_PLANT)
            # the daemon died with the program (it was the namespace init), before any release
            assert slot.cgroup is not None and slot.cgroup.tasks() == 0
        assert planted.ok, planted.stderr_text
        assert "shm True" in planted.stdout and planted.memory_peak_bytes and planted.memory_peak_bytes > 32 << 20
        assert slot.last_evidence is not None and slot.last_evidence.clean
        assert slot.cgroup.tasks() == 0 and slot.cgroup.shmem_bytes() == 0
        assert slot.storage.leftover_entries() == 0
        async with pool.session() as again:
            assert again is slot  # the one slot, reused
            seen = await again.run(_LOOK)
        lines = dict(line.split(" ", 1) for line in seen.stdout.splitlines())
        assert lines == {"files": "[]", "shm": "-1", "key": "-1", "procs": "[1]"}
        # the second call's counters start from zero: its CPU and peak are its own
        assert seen.cpu_time_s is not None and planted.cpu_time_s is not None
        assert seen.cpu_time_s < planted.cpu_time_s
        assert seen.memory_peak_bytes is not None and seen.memory_peak_bytes < 32 << 20
