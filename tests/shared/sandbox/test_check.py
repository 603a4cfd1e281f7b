"""``trajforge sandbox check`` and the prod refusal, against the real host."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from shared.errors import SandboxError
from shared.sandbox.check import PROTECTIONS, check_protections, format_table
from shared.sandbox.pool import SandboxPool
from shared.settings import Settings
from tests.shared.sandbox.conftest import small_limits

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="every protection needs a root service")


async def test_every_protection_is_active_on_this_host(pool: SandboxPool) -> None:
    rows = await check_protections(pool)
    assert [row.name for row in rows] == list(PROTECTIONS)
    assert all(row.active for row in rows), format_table(rows)
    assert pool.free == pool.pool_size


@pytest.mark.parametrize(
    "disabled, named", [({"cgroups": False}, "cgroups"), ({"seccomp": False}, "seccomp")]
)
async def test_prod_refuses_to_start_without_a_protection(disabled: dict[str, bool], named: str) -> None:
    pool = SandboxPool(1, limits=small_limits(), require_protections=True, **disabled)
    with pytest.raises(SandboxError, match=f"TRAJFORGE_ENV=prod: missing sandbox protection\\(s\\): {named}:"):
        await pool.start()
    assert pool.slots() == []  # nothing left behind


async def test_from_settings_requires_protections_only_in_prod() -> None:
    prod = SandboxPool.from_settings(Settings(env="prod", key_salt="x" * 32), pool_size=1)
    dev = SandboxPool.from_settings(Settings(env="dev", tools_memory_bytes=100 << 20), pool_size=1)
    assert prod.require_protections and not dev.require_protections
    assert dev.limits.memory_bytes == 100 << 20
    async with prod:  # every protection is active here, so prod starts
        assert (await prod.execute("print(1)")).stdout == "1\n"


def test_cli_prints_the_table() -> None:
    env = {**os.environ, "TRAJFORGE_TOOLS_POOL_SIZE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", "sandbox", "check"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    for name in PROTECTIONS:
        assert any(line.startswith(name) and "active" in line for line in done.stdout.splitlines()), done.stdout
