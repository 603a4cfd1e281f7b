"""python and bash tools over the real sandbox pool."""

from __future__ import annotations

from services.tools.code_tools import BashTool, PythonTool
from services.tools.manager import ToolManager
from shared.sandbox.pool import SandboxPool
from shared.sandbox.result import ExecutionResult


def _call(name: str, arguments: dict[str, object]) -> dict[str, object]:
    return {"id": "t1", "function": {"name": name, "arguments": arguments}}


async def test_python_tool_shows_stdout_stderr_and_status(pool: SandboxPool) -> None:
    manager = ToolManager([PythonTool(pool)])
    ok = await manager.call_structured(
        _call("python", {"code": "import sys\nprint(2 + 3)\nprint('warn', file=sys.stderr)"})
    )
    assert ok.ok and ok.content == "exit_status: ok (code 0)\nstdout:\n5\n\nstderr:\nwarn\n"
    bad = await manager.call_structured(_call("python", {"code": "raise ValueError('nope')"}))
    assert (bad.ok, bad.error_kind) == (False, "nonzero_exit") and "ValueError: nope" in bad.content


async def test_bash_tool_and_timeout_argument(pool: SandboxPool) -> None:
    manager = ToolManager([BashTool(pool)])
    ok = await manager.call_structured(_call("bash", {"code": "echo hello; exit 0"}))
    assert ok.ok and "stdout:\nhello" in ok.content
    slow = await manager.call_structured(_call("bash", {"code": "sleep 5", "timeout_s": 0.3}))
    assert slow.error_kind == "timeout" and slow.latency_s < 3


async def test_schema_refuses_missing_code_and_huge_timeouts(pool: SandboxPool) -> None:
    manager = ToolManager([PythonTool(pool)])
    for arguments in ({}, {"code": "1", "timeout_s": 1000}, {"code": "1", "shell": True}):
        result = await manager.call_structured(_call("python", arguments))
        assert result.error_kind == "invalid_arguments"


def test_render_truncates_each_stream_and_marks_the_cap(pool: SandboxPool) -> None:
    tool = PythonTool(pool, max_output_chars=400)
    result = ExecutionResult(
        status="output_limit", exit_code=-9, stdout="a" * 5000, stdout_truncated=True
    )
    text = tool.render(result)
    assert text.startswith("exit_status: output_limit (code -9)") and "[output cap reached]" in text
    assert "chars truncated" in text and len(text) < 600 and "stderr" not in text


async def test_busy_pool_is_reported_as_pool_exhausted(pool: SandboxPool) -> None:
    held = [await pool.acquire(), await pool.acquire()]
    pool.acquire_timeout_s = 0.1
    try:
        result = await ToolManager([PythonTool(pool)]).call_structured(
            _call("python", {"code": "print(1)"})
        )
    finally:
        for slot in held:
            await pool.release(slot)
    assert (result.ok, result.error_kind) == (False, "pool_exhausted")
    assert "no sandbox free within 0.1 s" in result.content
