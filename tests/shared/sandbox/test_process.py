"""run_limited on plain host commands, and status classification."""

from __future__ import annotations

import signal
import sys
import time

import pytest

from shared.sandbox.limits import SandboxLimits
from shared.sandbox.process import classify, run_limited

LIMITS = SandboxLimits(max_output_bytes=4096, memory_bytes=256 * 1024 * 1024)


async def test_captures_both_streams_and_exit_code() -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    result = await run_limited([sys.executable, "-c", code], limits=LIMITS, timeout_s=10)
    assert (result.stdout, result.stderr, result.exit_code, result.status) == (
        "out\n",
        "err\n",
        3,
        "nonzero_exit",
    )


async def test_floods_on_both_streams_are_capped_and_killed() -> None:
    code = "import sys\nwhile True:\n    sys.stdout.write('o' * 9000); sys.stderr.write('e' * 9000)"
    started = time.perf_counter()
    result = await run_limited([sys.executable, "-c", code], limits=LIMITS, timeout_s=10)
    assert result.status == "output_limit" and time.perf_counter() - started < 5
    assert len(result.stdout) <= 4096 and len(result.stderr) <= 4096
    assert result.stdout_truncated or result.stderr_truncated


async def test_invalid_utf8_is_carried_base64_and_shown_escaped() -> None:
    code = "import sys; sys.stdout.buffer.write(b'ok\\xff\\xfe')"
    result = await run_limited([sys.executable, "-c", code], limits=LIMITS, timeout_s=10)
    assert result.ok and result.stdout_encoding == "base64" and result.stdout == "b2v//g=="
    assert result.stdout_bytes() == b"ok\xff\xfe" and result.stdout_text == "ok\\xff\\xfe"


async def test_timeout_kills_the_whole_group() -> None:
    argv = ["/bin/sh", "-c", "sleep 30 & sleep 30; wait"]
    started = time.perf_counter()
    result = await run_limited(argv, limits=LIMITS, timeout_s=0.3)
    assert result.status == "timeout" and time.perf_counter() - started < 3.5


async def test_environment_is_what_the_caller_gives() -> None:
    result = await run_limited(["/usr/bin/env"], limits=LIMITS, timeout_s=5, env={"ONLY": "this"})
    assert result.stdout == "ONLY=this\n"


@pytest.mark.parametrize(
    "returncode, timed_out, overflow, stderr, status",
    [
        (0, False, False, "", "ok"),
        (-9, True, False, "", "timeout"),
        (-9, False, True, "", "output_limit"),
        (128 + signal.SIGXCPU, False, False, "", "cpu_limit"),
        (-signal.SIGXFSZ, False, False, "", "file_size_limit"),
        (-signal.SIGKILL, False, False, "", "killed"),
        (1, False, False, "Traceback...\nMemoryError\n", "memory_exceeded"),
        (
            1,
            False,
            False,
            "BlockingIOError: [Errno 11] Resource temporarily unavailable",
            "process_limit",
        ),
        (2, False, False, "boom", "nonzero_exit"),
    ],
)
def test_classify(
    returncode: int, timed_out: bool, overflow: bool, stderr: str, status: str
) -> None:
    assert (
        classify(returncode=returncode, timed_out=timed_out, overflow=overflow, stderr=stderr)
        == status
    )
