"""Limits, timeout clamping and the rlimits they set."""

from __future__ import annotations

import ast
import math
import resource
import sys

import pytest
from pydantic import ValidationError

from shared.sandbox.limits import MAX_TIMEOUT_S, SandboxLimits, clamp_timeout
from shared.sandbox.process import run_limited


@pytest.mark.parametrize(
    "value, expected",
    [(None, 90.0), (0, 90.0), (-5, 90.0), (math.nan, 90.0), (3.5, 3.5), (10_000, 90.0)],
)
def test_clamp_timeout(value: float | None, expected: float) -> None:
    assert clamp_timeout(value, default=MAX_TIMEOUT_S) == expected


def test_defaults_and_bounds() -> None:
    assert SandboxLimits().timeout_s == 90.0
    with pytest.raises(ValidationError):
        SandboxLimits(timeout_s=91)


async def test_rlimits_reach_the_child() -> None:
    limits = SandboxLimits(
        cpu_s=7, memory_bytes=300 * 1024 * 1024, max_processes=40, open_files=100
    )
    code = (
        "import resource as r; print([r.getrlimit(x) for x in "
        "(r.RLIMIT_CPU, r.RLIMIT_AS, r.RLIMIT_NPROC, r.RLIMIT_NOFILE, r.RLIMIT_CORE)])"
    )
    result = await run_limited([sys.executable, "-c", code], limits=limits, timeout_s=10)
    assert ast.literal_eval(result.stdout) == [
        (7, 8),
        (300 << 20, 300 << 20),
        (40, 40),
        (100, 100),
        (0, 0),
    ]
    assert resource.getrlimit(resource.RLIMIT_NPROC) != (40, 40)  # the parent is untouched
