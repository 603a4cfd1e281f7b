"""Resource budgets of one sandboxed run and the rlimits that enforce them."""

from __future__ import annotations

import resource

from pydantic import BaseModel, Field

__all__ = ["MAX_TIMEOUT_S", "SandboxLimits", "apply_rlimits", "clamp_timeout"]

# Hard ceiling on any requested wall-clock timeout (requests may ask for less).
MAX_TIMEOUT_S = 90.0


class SandboxLimits(BaseModel):
    """Per-run budgets; the defaults suit model-written snippets.

    ``cpu_s`` bounds the CPU seconds of the whole call (every process of the
    slot's cgroup together, and each process by ``RLIMIT_CPU``);
    ``cpu_cores`` is the CFS quota; ``memory_bytes`` bounds the cgroup (tmpfs,
    shm, pipes, memfd and kernel memory included) and each address space;
    ``max_processes`` is the cgroup's ``pids.max`` (and ``RLIMIT_NPROC``);
    ``tmpfs_bytes`` / ``tmpfs_inodes`` cap the slot's one writable tmpfs.
    """

    timeout_s: float = Field(default=MAX_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)
    cpu_s: int = Field(default=95, ge=1)
    cpu_cores: float = Field(default=1.0, ge=0.05, le=64.0)
    memory_bytes: int = Field(default=512 * 1024 * 1024, ge=16 * 1024 * 1024)
    max_processes: int = Field(default=64, ge=4)
    file_size_bytes: int = Field(default=64 * 1024 * 1024, ge=0)
    open_files: int = Field(default=256, ge=16)
    tmpfs_bytes: int = Field(default=64 * 1024 * 1024, ge=1024 * 1024)
    tmpfs_inodes: int = Field(default=8192, ge=64)
    max_output_bytes: int = Field(default=1024 * 1024, ge=1024)


def clamp_timeout(value: float | None, *, default: float) -> float:
    """A usable timeout: NaN, None, zero or negative give ``default``; capped at 90 s."""
    if value is None or value != value or value <= 0:
        return min(default, MAX_TIMEOUT_S)
    return min(float(value), MAX_TIMEOUT_S)


def apply_rlimits(limits: SandboxLimits, *, nproc_slack: int = 0) -> None:
    """Set the rlimits in the calling (freshly forked) process; inherited by the sandbox.

    ``nproc_slack`` lifts RLIMIT_NPROC above ``max_processes`` when a pids
    cgroup enforces that number, so the cgroup (whose refusals are counted
    and reported) is the limit a fork bomb meets first.
    """
    pairs = {
        # The hard CPU limit one second later, so the soft one delivers SIGXCPU
        # (reported as cpu_limit) before the kernel's SIGKILL.
        resource.RLIMIT_CPU: (limits.cpu_s, limits.cpu_s + 1),
        resource.RLIMIT_AS: (limits.memory_bytes, limits.memory_bytes),
        resource.RLIMIT_NPROC: (limits.max_processes + nproc_slack, limits.max_processes + nproc_slack),
        resource.RLIMIT_FSIZE: (limits.file_size_bytes, limits.file_size_bytes),
        resource.RLIMIT_NOFILE: (limits.open_files, limits.open_files),
        resource.RLIMIT_CORE: (0, 0),
    }
    for which, (soft, hard) in pairs.items():
        resource.setrlimit(which, (soft, hard))
