"""Hostile programs: each is contained, reported with a status, and the pool keeps serving."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from services.tools.code_tools import BashTool, PythonTool
from services.tools.manager import ToolManager
from shared.errors import UnsafeResultFile
from shared.sandbox.pool import SandboxPool
from shared.sandbox.reaper import pids_of_uid
from shared.sandbox.result import ExecutionResult
from tests.shared.sandbox.conftest import small_limits


async def _run_then_serve(
    pool: SandboxPool, code: str, language: str = "python", **kw: float
) -> ExecutionResult:
    """Run hostile ``code``, then check every slot is clean and answers a normal call."""
    result = await pool.execute(code, language=language, **kw)
    for slot in pool.slots():
        assert pids_of_uid(slot.uid) == []
    after = [await pool.execute("print('next')") for _ in range(pool.pool_size)]
    assert [r.stdout for r in after] == ["next\n"] * pool.pool_size
    return result


async def test_python_fork_bomb_hits_the_process_limit(pool: SandboxPool) -> None:
    result = await _run_then_serve(pool, "import os\nwhile True:\n    os.fork()")
    assert result.status == "process_limit"


async def test_bash_fork_bomb_is_contained(pool: SandboxPool) -> None:
    result = await _run_then_serve(pool, "b() { b | b & }; b; sleep 5", language="bash")
    assert result.status in {"timeout", "process_limit"}
    assert result.duration_s < 4.0


async def test_memory_hog_is_reported_as_memory_exceeded(pool: SandboxPool) -> None:
    result = await _run_then_serve(
        pool, "chunks = []\nwhile True:\n    chunks.append(bytearray(8 << 20))"
    )
    assert result.status == "memory_exceeded" and "MemoryError" in result.stderr


async def test_infinite_loop_is_killed_at_the_wall_clock_timeout(pool: SandboxPool) -> None:
    result = await _run_then_serve(pool, "while True:\n    pass", timeout_s=1.0)
    assert result.status == "timeout" and 1.0 <= result.duration_s < 3.0


async def test_cpu_budget_stops_a_busy_loop() -> None:
    async with SandboxPool(1, limits=small_limits(cpu_s=1, timeout_s=8.0)) as busy_pool:
        result = await _run_then_serve(busy_pool, "while True:\n    pass")
    assert result.status == "cpu_limit"


async def test_process_ignoring_sigterm_is_killed(pool: SandboxPool) -> None:
    code = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "while True:\n    time.sleep(0.05)"
    )
    result = await _run_then_serve(pool, code, timeout_s=1.0)
    assert result.status == "timeout" and result.duration_s < 3.0


async def test_one_gigabyte_of_stdout_is_capped_without_deadlock(pool: SandboxPool) -> None:
    started = time.perf_counter()
    code = "head -c 1000000000 /dev/zero | tr '\\0' x & head -c 1000000000 /dev/zero >&2; wait"
    result = await _run_then_serve(pool, code, language="bash")
    assert result.status == "output_limit"
    assert len(result.stdout_bytes()) + len(result.stderr_bytes()) <= 2 * pool.limits.max_output_bytes
    assert result.stdout_truncated or result.stderr_truncated
    assert time.perf_counter() - started < 5.0


async def test_writing_outside_tmp_fails(pool: SandboxPool) -> None:
    code = "\n".join(
        [
            "for p in ['/usr/evil', '/evil', '/code/main.py', '/proc/evil']:",
            "    try:",
            "        open(p, 'w').write('x')",
            "        print('WROTE', p)",
            "    except OSError as exc:",
            "        print('denied', p, exc.errno)",
            "raise SystemExit(3)",
        ]
    )
    result = await _run_then_serve(pool, code)
    assert result.status == "nonzero_exit" and "WROTE" not in result.stdout
    assert result.stdout.count("denied") == 4
    assert not Path("/usr/evil").exists()


async def test_file_size_limit_stops_a_disk_fill(pool: SandboxPool) -> None:
    result = await _run_then_serve(
        pool, "head -c 50000000 /dev/zero > /workspace/fill", language="bash"
    )
    assert result.status in {"file_size_limit", "nonzero_exit"}
    assert result.status != "ok"


async def test_another_sandboxs_files_are_unreachable(pool: SandboxPool) -> None:
    async with pool.session() as owner, pool.session() as intruder:
        await owner.run("echo s3cret > secret.txt", language="bash")
        target = owner.work_dir / "secret.txt"
        result = await intruder.run(f"cat {target} || cat /workspace/secret.txt", language="bash")
        assert result.status == "nonzero_exit" and "s3cret" not in result.stdout
        assert oct(owner.work_dir.stat().st_mode & 0o777) == "0o700"


@pytest.mark.parametrize("host, port", [("127.0.0.1", 5432), ("127.0.0.1", 6379), ("1.1.1.1", 80)])
async def test_network_is_unreachable(pool: SandboxPool, host: str, port: int) -> None:
    code = (
        f"import socket\ns = socket.socket()\ns.settimeout(1)\n"
        f"s.connect(({host!r}, {port}))\nprint('CONNECTED')"
    )
    result = await _run_then_serve(pool, code)
    assert result.status == "nonzero_exit" and "CONNECTED" not in result.stdout
    assert "ConnectionRefusedError" in result.stderr or "Network is unreachable" in result.stderr


async def test_child_that_outlives_its_parent_is_reaped(pool: SandboxPool) -> None:
    slot = await pool.acquire()
    code = (
        "(setsid sh -c 'sleep 1; echo late > /workspace/late' &) ; "
        "nohup sleep 60 >/dev/null 2>&1 & echo started"
    )
    result = await slot.run(code, language="bash")
    await pool.release(slot)
    assert result.stdout == "started\n" and pids_of_uid(slot.uid) == []
    time.sleep(1.2)
    assert not (slot.work_dir / "late").exists()
    assert (await pool.execute("print('next')")).stdout == "next\n"


async def test_planted_symlink_is_not_followed_by_host_reads(pool: SandboxPool) -> None:
    async with pool.session() as slot:
        await slot.run("ln -s /etc/shadow leak; ln -s / root; mkfifo pipe", language="bash")
        for name in ("leak", "root/etc/shadow", "pipe", "../x"):
            with pytest.raises(UnsafeResultFile):
                slot.read_file(name)
    assert (await pool.execute("print('next')")).stdout == "next\n"


async def test_service_environment_and_processes_are_invisible(
    pool: SandboxPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAJFORGE_SECRET_TOKEN", "do-not-leak")
    code = "env; cat /proc/1/environ; echo; ls /proc | grep -c '^[0-9]'; ls /; ls /root /home 2>&1"
    result = await _run_then_serve(pool, code, language="bash")
    text = result.stdout_text  # /proc/1/environ is NUL-separated: carried base64
    assert "do-not-leak" not in text and "TRAJFORGE" not in text
    assert os.getcwd() not in text
    process_count = int([line for line in text.splitlines() if line.isdigit()][0])
    assert process_count <= 4
    assert "No such file or directory" in text


async def test_the_services_own_files_are_not_mounted(pool: SandboxPool) -> None:
    repo_root = Path(__file__).resolve().parents[3]
    result = await _run_then_serve(pool, f"ls {repo_root} || ls {Path.home()}", language="bash")
    assert result.status == "nonzero_exit" and result.stdout == ""
    assert "No such file or directory" in result.stderr


async def test_escapes_surface_as_tool_error_kinds(pool: SandboxPool) -> None:
    manager = ToolManager([PythonTool(pool), BashTool(pool)])
    cases = {
        "memory_exceeded": ("python", "x = bytearray(1 << 30)"),
        "timeout": ("bash", "trap '' TERM; while :; do :; done"),
        "process_limit": ("python", "import os\nwhile True:\n    os.fork()"),
    }
    for kind, (tool, code) in cases.items():
        args = {"code": code, "timeout_s": 1.0}
        result = await manager.call_structured(
            {"id": kind, "function": {"name": tool, "arguments": args}}
        )
        assert (result.ok, result.error_kind) == (False, kind)
        assert result.content.startswith(f"exit_status: {kind}")
