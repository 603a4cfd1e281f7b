"""The seccomp filter every sandboxed program runs under, as a classic BPF program.

bubblewrap loads it (``--seccomp FD``) right before it executes the program,
after building the sandbox, so bubblewrap's own mounts are unaffected. The
filter is a deny list on top of the other layers (namespaces, no
capabilities, no new privileges): each call below returns ``EPERM``, chosen
because it is either a known kernel attack surface or a way to keep state
or reach outside the call.

=====================  ===========================================================
calls                  why they are refused
=====================  ===========================================================
add_key, request_key,  kernel keyrings are per uid and outlive the process: a key
keyctl                 written in one call would be readable by the next call on
                       the same slot uid
io_uring_setup/enter/  io_uring runs work in kernel threads outside the process's
register               seccomp context and has a long record of privilege bugs
ptrace, process_vm_*,  reading or steering another process (the sandbox's init,
pidfd_getfd, kcmp,     a sibling call's leftovers); process_madvise acts on another
process_madvise        process's memory
mount, umount2,        changing the mount tree (nothing may be remounted writable
pivot_root, chroot,    or layered over the read-only system); the new mount API
fsopen, fsconfig,      calls are the same surface
fsmount, fspick,
move_mount, open_tree,
open_tree_attr,
mount_setattr
unshare, setns;        new namespaces give a fresh set of capabilities inside them
clone with CLONE_NEW*  (the root of most user-namespace escalations)
clone3                 its flags live in memory a filter cannot read, so it gets
                       ENOSYS and libc falls back to clone, whose flags are checked
bpf, perf_event_open,  eBPF and perf are large kernel attack surfaces and leak
userfaultfd            kernel addresses; userfaultfd is the classic tool to win
                       kernel races
kexec_load,            replacing the kernel or loading code into it
kexec_file_load,
init_module,
finit_module,
delete_module
reboot, swapon/off,    host-wide state: power, swap, accounting, clocks, names,
acct, settimeofday,    quotas, the kernel log
clock_settime,
clock_adjtime,
adjtimex, sethostname,
setdomainname,
quotactl(_fd), syslog
open_by_handle_at,     open files by handle, bypassing the mount tree (the classic
name_to_handle_at      container escape)
iopl, ioperm, vhangup, raw hardware ports, terminal hangup, obsolete interfaces
uselib, _sysctl,
lookup_dcookie,
nfsservctl
fanotify_init          watching filesystem events of other processes
mbind, migrate_pages,  moving pages across NUMA nodes: host-wide memory placement
move_pages,
set_mempolicy
memfd_secret           memory hidden from the kernel's own inspection
=====================  ===========================================================

Foreign ABIs are refused as a whole: on x86-64, i386 (``int 0x80``) and
x32 system calls return ``EPERM``, since their numbers differ and a deny list
for one ABI says nothing about another.
"""

from __future__ import annotations

import os
import platform
import struct
from functools import cache

__all__ = ["DENIED_SYSCALLS", "filter_fd", "filter_program", "seccomp_supported", "syscall_number"]

DENIED_SYSCALLS: tuple[str, ...] = (
    "add_key", "request_key", "keyctl",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "process_madvise",
    "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
    "move_mount", "open_tree", "open_tree_attr", "mount_setattr",
    "unshare", "setns",
    "bpf", "perf_event_open", "userfaultfd",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "clock_adjtime",
    "adjtimex", "sethostname", "setdomainname", "quotactl", "quotactl_fd", "syslog",
    "open_by_handle_at", "name_to_handle_at",
    "iopl", "ioperm", "vhangup", "uselib", "_sysctl", "lookup_dcookie", "nfsservctl",
    "fanotify_init", "mbind", "migrate_pages", "move_pages", "set_mempolicy", "memfd_secret",
)  # fmt: skip

_X86_64 = {
    "add_key": 248, "request_key": 249, "keyctl": 250,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438,
    "kcmp": 312, "process_madvise": 440,
    "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "move_mount": 429, "open_tree": 428, "open_tree_attr": 467,
    "mount_setattr": 442, "unshare": 272, "setns": 308,
    "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
    "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
    "delete_module": 176, "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163,
    "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
    "sethostname": 170, "setdomainname": 171, "quotactl": 179, "quotactl_fd": 443, "syslog": 103,
    "open_by_handle_at": 304, "name_to_handle_at": 303, "iopl": 172, "ioperm": 173, "vhangup": 153,
    "uselib": 134, "_sysctl": 156, "lookup_dcookie": 212, "nfsservctl": 180, "fanotify_init": 300,
    "mbind": 237, "migrate_pages": 256, "move_pages": 279, "set_mempolicy": 238, "memfd_secret": 447,
    "clone": 56, "clone3": 435,
}  # fmt: skip
# The generic table (asm-generic/unistd.h) used by arm64; calls it lacks are skipped.
_AARCH64 = {
    "add_key": 217, "request_key": 218, "keyctl": 219,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438,
    "kcmp": 272, "process_madvise": 440,
    "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "move_mount": 429, "open_tree": 428, "open_tree_attr": 467,
    "mount_setattr": 442, "unshare": 97, "setns": 268,
    "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
    "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273,
    "delete_module": 106, "reboot": 142, "swapon": 224, "swapoff": 225, "acct": 89,
    "settimeofday": 170, "clock_settime": 112, "clock_adjtime": 266, "adjtimex": 171,
    "sethostname": 161, "setdomainname": 162, "quotactl": 60, "quotactl_fd": 443, "syslog": 116,
    "open_by_handle_at": 265, "name_to_handle_at": 264, "vhangup": 58, "lookup_dcookie": 18,
    "fanotify_init": 262, "mbind": 235, "migrate_pages": 238, "move_pages": 239,
    "set_mempolicy": 237, "memfd_secret": 447, "clone": 220, "clone3": 435,
}  # fmt: skip
_ARCHES = {"x86_64": (0xC000003E, _X86_64), "aarch64": (0xC00000B7, _AARCH64)}

_LD_ABS_W, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_EPERM, _ENOSYS = 1, 38
_X32_BIT = 0x40000000
_CLONE_NEW_MASK = 0x7E020080  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME


def seccomp_supported() -> bool:
    """True on an architecture this module has a syscall table for."""
    return platform.machine() in _ARCHES


def syscall_number(name: str) -> int:
    """This machine's number of the system call ``name`` (from the filter's table)."""
    _, numbers = _ARCHES.get(platform.machine(), _ARCHES["x86_64"])
    return numbers[name]


def _assemble(code: list[tuple[int, str | int, str | int, int]], labels: dict[str, int]) -> bytes:
    """Pack instructions whose jump targets may be label names into sock_filter structs."""
    out = bytearray()
    for index, (op, jt, jf, k) in enumerate(code):
        offsets = []
        for target in (jt, jf):
            offsets.append(labels[target] - index - 1 if isinstance(target, str) else target)
        out += struct.pack("<HBBI", op, offsets[0], offsets[1], k)
    return bytes(out)


@cache
def filter_program() -> bytes:
    """The BPF program for this machine's architecture (raises on an unknown one)."""
    machine = platform.machine()
    if machine not in _ARCHES:
        raise OSError(f"no seccomp syscall table for architecture {machine!r}")
    arch, numbers = _ARCHES[machine]
    code: list[tuple[int, str | int, str | int, int]] = [
        (_LD_ABS_W, 0, 0, _OFF_ARCH),
        (_JEQ, 0, "deny", arch),
        (_LD_ABS_W, 0, 0, _OFF_NR),
    ]
    if machine == "x86_64":
        code.append((_JGE, "deny", 0, _X32_BIT))
    for name in DENIED_SYSCALLS:
        if name in numbers:
            code.append((_JEQ, "deny", 0, numbers[name]))
    code += [
        (_JEQ, "nosys", 0, numbers["clone3"]),
        (_JEQ, "clone", 0, numbers["clone"]),
        (_RET, 0, 0, _RET_ALLOW),
    ]
    labels = {"clone": len(code)}
    code += [(_LD_ABS_W, 0, 0, _OFF_ARG0), (_JSET, "deny", 0, _CLONE_NEW_MASK), (_RET, 0, 0, _RET_ALLOW)]
    labels["deny"] = len(code)
    code.append((_RET, 0, 0, _RET_ERRNO | _EPERM))
    labels["nosys"] = len(code)
    code.append((_RET, 0, 0, _RET_ERRNO | _ENOSYS))
    return _assemble(code, labels)


def filter_fd() -> int:
    """A fresh readable fd positioned at the start of the program (bwrap reads it to EOF)."""
    program = filter_program()
    fd = os.memfd_create("trajforge-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd
