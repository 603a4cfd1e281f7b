"""Shared fixtures: a small real sandbox pool with tight limits."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from shared.sandbox.limits import SandboxLimits
from shared.sandbox.pool import SandboxPool


def small_limits(**overrides: object) -> SandboxLimits:
    """Tight budgets so hostile programs are stopped within a couple of seconds."""
    values: dict[str, object] = {
        "timeout_s": 2.0,
        "cpu_s": 2,
        "memory_bytes": 64 * 1024 * 1024,
        "max_processes": 32,
        "file_size_bytes": 1024 * 1024,
        "tmpfs_bytes": 4 * 1024 * 1024,
        "max_output_bytes": 64 * 1024,
    }
    values.update(overrides)
    return SandboxLimits.model_validate(values)


@pytest.fixture
async def pool() -> AsyncIterator[SandboxPool]:
    """A fresh two-slot pool per test."""
    async with SandboxPool(2, limits=small_limits(), acquire_timeout_s=5.0) as sandbox_pool:
        yield sandbox_pool
