"""The containment battery: each attack is judged on host-side evidence measured before and after.

Every case runs in a real pool (bubblewrap, slot cgroups, capped tmpfs,
seccomp), then the slot is released and the host is measured: processes of
the slot uids and cgroups, host disk and inodes, host shared memory, CPU
seconds charged to the pool's cgroups, host sockets, host files, kernel keys
and IPC objects of the slot uids, host mounts. The pool must be back at full
size and serve a normal call on every slot afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from services.tools.code_tools import PythonTool
from services.tools.manager import ToolManager
from shared.sandbox.limits import SandboxLimits
from shared.sandbox.pool import SandboxPool
from shared.sandbox.result import ExecutionResult
from shared.sandbox.seccomp import syscall_number
from tests.shared.sandbox.host_evidence import HostSnapshot, assert_contained

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the full containment needs a root service")

LIMITS = SandboxLimits(
    timeout_s=2.0,
    cpu_s=1,
    cpu_cores=1.0,
    memory_bytes=64 << 20,
    max_processes=32,
    file_size_bytes=64 << 20,  # above the tmpfs cap, so the tmpfs is what stops a disk fill
    tmpfs_bytes=4 << 20,
    tmpfs_inodes=512,
    max_output_bytes=64 << 10,
)
# CPU seconds one call may charge the host: its budget plus the watchdog's reaction time.
CPU_BUDGET_S = LIMITS.cpu_s + 1.0


@dataclass(frozen=True)
class Attack:
    name: str
    code: str
    statuses: frozenset[str]
    language: str = "python"
    stdout_has: str = ""


def _a(name: str, code: str, *statuses: str, language: str = "python", stdout_has: str = "") -> Attack:
    return Attack(name, code, frozenset(statuses), language, stdout_has)


_SYSCALL = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "ctypes.set_errno(0)\n"
    "r = libc.syscall({nr}, {args})\n"
    "print('errno', 0 if r >= 0 else ctypes.get_errno())\n"
)


def _syscall(name: str, *args: int, nr: int | None = None) -> Attack:
    number = syscall_number(name) if nr is None else nr
    code = _SYSCALL.format(nr=number, args=", ".join(f"ctypes.c_long({a})" for a in args) or "")
    return _a(f"syscall-{name}", code, "ok", stdout_has="errno 1\n")


_CLONE_NEWUSER, _CLONE_NEWNS, _CLONE_NEWNET = 0x10000000, 0x00020000, 0x40000000

SYSCALL_ATTACKS = [
    _syscall("keyctl", 1, 0),  # KEYCTL_JOIN_SESSION_KEYRING
    _syscall("add_key", 0, 0, 0, 0, -4),
    _syscall("request_key", 0, 0, 0, 0),
    _syscall("io_uring_setup", 8, 0),
    _syscall("io_uring_enter", 0, 1, 0, 0, 0),
    _syscall("ptrace", 16, 1),  # PTRACE_ATTACH to the sandbox's init
    _syscall("process_vm_readv", 1, 0, 0, 0, 0, 0),
    _syscall("pidfd_getfd", 0, 0, 0),
    _syscall("mount", 0, 0, 0, 0, 0),
    _syscall("umount2", 0, 2),
    _syscall("pivot_root", 0, 0),
    _syscall("chroot", 0),
    _syscall("fsopen", 0, 0),
    _syscall("open_tree", -100, 0, 1),
    _syscall("move_mount", 0, 0, 0, 0, 0),
    _syscall("unshare", _CLONE_NEWUSER),
    _syscall("unshare", _CLONE_NEWNS | _CLONE_NEWNET),
    _syscall("setns", 0, 0),
    _syscall("bpf", 0, 0, 0),
    _syscall("perf_event_open", 0, 0, -1, -1, 0),
    _syscall("userfaultfd", 0),
    _syscall("kexec_load", 0, 0, 0, 0),
    _syscall("init_module", 0, 0, 0),
    _syscall("finit_module", 0, 0, 0),
    _syscall("delete_module", 0, 0),
    _syscall("open_by_handle_at", 0, 0, 0),
    _syscall("name_to_handle_at", -100, 0, 0, 0, 0),
    _syscall("reboot", 0xFEE1DEAD, 672274793, 0x4321FEDC, 0),
    _syscall("swapon", 0, 0),
    _syscall("sethostname", 0, 0),
    _syscall("clock_settime", 0, 0),
    _syscall("syslog", 3, 0, 0),
    _syscall("memfd_secret", 0),
    _syscall("kcmp", 1, 1, 0, 0, 0),
    _syscall("clone", _CLONE_NEWUSER | 17),  # raw clone asking for a user namespace
]
if os.uname().machine == "x86_64":
    SYSCALL_ATTACKS.append(_syscall("x32-getpid", nr=39 | 0x40000000))  # the x32 ABI side door

_FILL = "with open({path!r}, 'wb') as f:\n    while True:\n        f.write(b'x' * 65536)\n        f.flush()"
_INODES = "import os\nfor i in range(100000):\n    open(os.path.join({path!r}, f'f{{i}}'), 'w').close()"
_BUSY = "while :; do :; done"

RESOURCE_ATTACKS = [
    # disk and inodes: every writable place is the slot's capped tmpfs
    _a("fill-workspace", _FILL.format(path="/workspace/fill"), "disk_limit"),
    _a("fill-tmp", _FILL.format(path="/tmp/fill"), "disk_limit"),
    _a("fill-dev-shm", _FILL.format(path="/dev/shm/fill"), "disk_limit"),
    _a("fill-with-dd", "dd if=/dev/zero of=/workspace/dd bs=1M count=1500", "disk_limit", language="bash"),
    _a("inodes-workspace", _INODES.format(path="/workspace"), "inode_limit"),
    _a("inodes-tmp-mkdir", "import os\nfor i in range(100000):\n    os.mkdir(f'/tmp/d{i}')", "inode_limit"),
    _a("inodes-symlinks", "import os\nfor i in range(100000):\n    os.symlink('/x', f'/dev/shm/l{i}')",
       "inode_limit"),
    _a("fallocate-huge", "import os\nfd = os.open('/workspace/big', os.O_CREAT | os.O_WRONLY)\n"
       "os.posix_fallocate(fd, 0, 1 << 31)", "nonzero_exit", "disk_limit"),
    _a("sparse-then-fill", "f = open('/workspace/sparse', 'wb')\nf.truncate(32 << 20)\n"
       "f.seek(0)\nwhile True:\n    f.write(b'y' * 65536)\n    f.flush()", "disk_limit"),
    _a("write-outside", "for p in ['/usr/x', '/etc/x', '/x', '/code/x', '/dev/x', '/proc/sys/kernel/hostname']:\n"
       "    try:\n        open(p, 'w').write('1')\n        print('WROTE', p)\n    except OSError:\n        pass",
       "ok"),
    # memory the address-space rlimit does not see
    _a("heap-growth", "x = []\nwhile True:\n    x.append(bytearray(8 << 20))", "memory_exceeded"),
    _a("memfd-fill", "import os\nfd = os.memfd_create('m')\nwhile True:\n    os.write(fd, b'm' * (1 << 20))",
       "memory_exceeded"),
    _a("pipe-buffers", "import os, fcntl\nkeep = []\nfor i in range(120):\n    r, w = os.pipe()\n"
       "    fcntl.fcntl(w, 1031, 1 << 20)\n    os.set_blocking(w, False)\n    keep.append((r, w))\n"
       "    try:\n        while True:\n            os.write(w, b'p' * 65536)\n    except BlockingIOError:\n        pass",
       "memory_exceeded"),
    # segments outlive their mapping: each is mapped, filled and detached, so RLIMIT_AS never sees the sum
    _a("sysv-shm-segments", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
       "libc.shmat.restype = ctypes.c_void_p\nfor i in range(64):\n    sid = libc.shmget(0, 8 << 20, 0o1600)\n"
       "    addr = libc.shmat(sid, None, 0)\n    assert addr not in (None, 2**64 - 1), ctypes.get_errno()\n"
       "    ctypes.memset(addr, 1, 8 << 20)\n    libc.shmdt(ctypes.c_void_p(addr))", "memory_exceeded"),
    _a("socket-buffers", "import socket\nkeep = []\nfor i in range(120):\n    a, b = socket.socketpair()\n"
       "    a.setblocking(False)\n    keep.append((a, b))\n    try:\n        while True:\n"
       "            a.send(b's' * 65536)\n    except BlockingIOError:\n        pass", "memory_exceeded", "ok"),
    _a("bash-string-doubling", "x=a; while :; do x=$x$x; done", "memory_exceeded", language="bash"),
    _a("mmap-anon-touch", "import mmap\nm = mmap.mmap(-1, 1 << 30)\nfor i in range(0, 1 << 30, 4096):\n"
       "    m[i] = 1", "memory_exceeded", "nonzero_exit"),
    # CPU over many processes: the budget covers the whole call
    _a("busy-loop", "while True:\n    pass", "cpu_limit", "timeout"),
    # (on a loaded host the wall clock may come first; the CPU charged is judged either way)
    _a("busy-processes", f"for i in 1 2 3 4 5 6 7 8; do ( {_BUSY} ) & done; wait", "cpu_limit", "timeout",
       language="bash"),
    _a("busy-short-lived", "while :; do ( i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done ) ; done",
       "cpu_limit", "timeout", language="bash"),
    _a("ignore-sigxcpu", "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass",
       "cpu_limit", "timeout"),
    # processes
    _a("fork-bomb", "import os\nwhile True:\n    os.fork()", "process_limit"),
    _a("bash-fork-bomb", "b() { b | b & }; b; sleep 5", "process_limit", "timeout", language="bash"),
    _a("thread-bomb", "import threading, time\nthreading.stack_size(256 << 10)\nwhile True:\n"
       "    threading.Thread(target=time.sleep, args=(30,)).start()", "process_limit"),
    _a("zombie-farm", "import os, time\nfor i in range(200):\n    if os.fork() == 0:\n        os._exit(0)\n"
       "time.sleep(0.2)", "process_limit", "ok"),
    _a("daemon-outlives", "(setsid sh -c 'sleep 60' &) ; nohup sleep 60 >/dev/null 2>&1 & echo started",
       "ok", language="bash"),
    _a("ignore-sigterm", "trap '' TERM HUP INT; sleep 60", "timeout", language="bash"),
    # privileges, escapes, information
    _a("setuid-root", "import os\ntry:\n    os.setuid(0)\n    print('ROOT')\nexcept OSError:\n"
       "    print('denied')", "ok", stdout_has="denied"),
    _a("setuid-binary", "ls /usr/bin/su /usr/bin/mount >/dev/null 2>&1; /usr/bin/su -c id 2>&1; "
       "/usr/bin/mount -t tmpfs x /tmp 2>&1; id -u", "ok", "nonzero_exit", language="bash"),
    _a("proc-service-secrets", "cat /proc/1/environ /proc/1/cmdline; ls /proc/1/fd; cat /etc/shadow; "
       "ls /sys /home /root", "nonzero_exit", language="bash"),
    _a("proc-kcore-mem", "for p in /proc/kcore /dev/mem /dev/kmem /dev/sda /dev/vda; do head -c1 $p && echo READ $p; "
       "done; exit 0", "ok", language="bash"),
    _a("sysrq-and-sysctl", "echo b > /proc/sysrq-trigger; echo 1 > /proc/sys/vm/drop_caches; exit 0", "ok",
       language="bash"),
    _a("inherited-fds", "import os\nextra = []\nfor fd in range(3, 4096):\n    try:\n        os.fstat(fd)\n"
       "        extra.append(fd)\n    except OSError:\n        pass\nprint('extra', extra)", "ok",
       stdout_has="extra []"),
    # network: a private loopback only
    _a("connect-host-postgres", "import socket\nsocket.create_connection(('127.0.0.1', 5432), timeout=1)",
       "nonzero_exit"),
    _a("connect-internet", "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)", "nonzero_exit"),
    _a("udp-out", "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.sendto(b'x', ('8.8.8.8', 53))",
       "nonzero_exit"),
    _a("listen-tcp", "import socket, time\ns = socket.socket()\ns.bind(('0.0.0.0', 47123))\ns.listen()\n"
       "time.sleep(0.3)", "ok"),
    _a("abstract-unix", "import socket, time\ns = socket.socket(socket.AF_UNIX)\ns.bind('\\0trajforge-leak')\n"
       "s.listen()\ntime.sleep(0.3)", "ok"),
    # output the system of record cannot store as it is
    _a("nul-and-invalid-utf8", "import sys\nsys.stdout.buffer.write(b'a\\x00b\\xff\\xed\\xa0\\x80')", "ok"),
    _a("stdout-flood", "head -c 1000000000 /dev/zero", "output_limit", language="bash"),
]
ATTACKS = SYSCALL_ATTACKS + RESOURCE_ATTACKS


@pytest.fixture
async def battery_pool() -> AsyncIterator[SandboxPool]:
    """Two slots with the battery's tight limits."""
    async with SandboxPool(2, limits=LIMITS, acquire_timeout_s=5.0) as pool:
        yield pool


def _mounts_of(pool: SandboxPool) -> int:
    roots = [str(slot.storage.root) for slot in pool.slots()]
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        return sum(1 for line in handle if any(root in line for root in roots))


async def _serves_at_full_size(pool: SandboxPool) -> None:
    assert pool.free == pool.pool_size
    slots = [await pool.acquire() for _ in range(pool.pool_size)]
    results = await asyncio.gather(*(slot.run("print('next')") for slot in slots))
    assert [(r.status, r.stdout) for r in results] == [("ok", "next\n")] * pool.pool_size
    for slot in slots:
        await pool.release(slot)


async def run_attack(pool: SandboxPool, attack: Attack) -> ExecutionResult:
    """Run one attack in a leased slot, release it, and judge the host before against after."""
    before = HostSnapshot.take(pool)
    mounts = _mounts_of(pool)
    async with pool.session() as slot:
        result = await slot.run(attack.code, language=attack.language)
        assert slot.cgroup is not None
        peak = slot.cgroup.usage().memory_peak_bytes
    assert peak <= LIMITS.memory_bytes, f"the call held {peak} bytes"
    assert slot.last_evidence is not None and slot.last_evidence.clean, slot.last_evidence
    assert result.duration_s < LIMITS.timeout_s + 2.0
    assert_contained(before, HostSnapshot.take(pool), cpu_budget_s=CPU_BUDGET_S)
    assert _mounts_of(pool) == mounts
    await _serves_at_full_size(pool)
    return result


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
async def test_attack_is_contained(battery_pool: SandboxPool, attack: Attack) -> None:
    result = await run_attack(battery_pool, attack)
    assert result.status in attack.statuses, (result.status, result.stdout_text[-300:], result.stderr_text[-500:])
    assert attack.stdout_has in result.stdout_text
    assert "WROTE" not in result.stdout_text and "ROOT" not in result.stdout_text and "READ" not in result.stdout_text


async def test_cpu_seconds_of_many_processes_are_one_budget() -> None:
    limits = LIMITS.model_copy(update={"timeout_s": 20.0, "cpu_cores": 2.0})
    async with SandboxPool(1, limits=limits) as pool:
        before = HostSnapshot.take(pool)
        result = await pool.execute(f"for i in 1 2 3 4 5 6 7 8; do ( {_BUSY} ) & done; wait", language="bash")
        assert_contained(before, HostSnapshot.take(pool), cpu_budget_s=CPU_BUDGET_S)
    assert result.status == "cpu_limit" and result.cpu_time_s is not None
    assert limits.cpu_s <= result.cpu_time_s <= CPU_BUDGET_S
    assert result.signal == 9  # killed as a group, not one process at a time by RLIMIT_CPU


def test_the_battery_is_large_enough() -> None:
    assert len(ATTACKS) >= 40


async def test_clone3_is_steered_to_clone_and_threads_still_work(battery_pool: SandboxPool) -> None:
    code = _SYSCALL.format(nr=syscall_number("clone3"), args="0, 0") + (
        "import threading\nt = threading.Thread(target=print, args=('thread ran',))\nt.start()\nt.join()"
    )
    result = await run_attack(battery_pool, _a("clone3", code, "ok"))
    assert result.stdout == "errno 38\nthread ran\n"


async def test_host_sockets_of_the_service_are_not_inherited(battery_pool: SandboxPool) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.set_inheritable(True)  # even an inheritable service socket must not reach the sandbox
    try:
        code = ("import os, stat\nfor fd in range(3, 4096):\n    try:\n        m = os.fstat(fd).st_mode\n"
                "        print('open', fd, stat.S_ISSOCK(m))\n    except OSError:\n        pass\nprint('done')")
        result = await run_attack(battery_pool, _a("fds", code, "ok"))
    finally:
        listener.close()
    assert result.stdout == "done\n"


async def test_the_tcp_port_a_sandbox_bound_is_free_on_the_host(battery_pool: SandboxPool) -> None:
    # The host holds a port (one the kernel picked, so nothing else has it) and the sandbox binds the same
    # number: that works only in a network namespace of its own. (Probing a fixed port on the host after the
    # run raced with whatever else on the host had that port as an ephemeral one.)
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    port = held.getsockname()[1]
    code = f"import socket\ns = socket.socket()\ns.bind(('127.0.0.1', {port}))\ns.listen()\nprint('bound')"
    try:
        async with battery_pool.session() as slot:
            result = await slot.run(code)
    finally:
        held.close()
    assert result.stdout == "bound\n", result


async def test_unstorable_output_reaches_postgres_through_the_tool(battery_pool: SandboxPool, pg_url: str) -> None:
    import asyncpg

    manager = ToolManager([PythonTool(battery_pool)])
    code = "import sys\nsys.stdout.buffer.write(b'nul\\x00 bad\\xff surrogate\\xed\\xa0\\x80 done')"
    tool = await manager.call_structured({"id": "1", "function": {"name": "python", "arguments": {"code": code}}})
    raw = await battery_pool.execute(code)
    assert raw.stdout_encoding == "base64"
    assert raw.stdout_bytes() == b"nul\x00 bad\xff surrogate\xed\xa0\x80 done"
    assert tool.ok and "nul\\x00 bad\\xff surrogate\\xed\\xa0\\x80 done" in tool.content
    conn = await asyncpg.connect(pg_url.replace("postgresql+asyncpg", "postgresql"))
    try:
        stored = await conn.fetchval(
            "SELECT $1::text || ($2::jsonb ->> 'stdout')", tool.content, json.dumps(raw.model_dump())
        )
    finally:
        await conn.close()
    assert stored.startswith(tool.content) and stored.endswith(raw.stdout)
