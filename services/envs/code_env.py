"""A code-execution env: the model runs Python or bash in the sandbox pool and submits a solution.

Envs are stepped synchronously (the server runs non-inline envs in a worker
thread), while the sandbox pool is asyncio-based; each step hands its run to
the pool's event loop with ``run_coroutine_threadsafe``. A task may carry
``tests`` (Python code that raises on failure): ``submit`` runs the solution
followed by the tests in a fresh sandbox, and the reward is 1.0 when they
pass, else 0.0.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from services.envs.base import Env
from shared.sandbox.pool import SandboxPool
from shared.sandbox.result import ExecutionResult
from shared.schema import StepResult

__all__ = ["CodeEnv"]


def _tool(name: str, description: str, field: str) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]},
    }}


_TOOLS = [
    _tool("python", "Run Python code in a fresh sandbox; returns exit status, stdout and stderr.", "code"),
    _tool("bash", "Run a bash command in a fresh sandbox; returns exit status, stdout and stderr.", "command"),
    _tool("submit", "Submit the final Python solution; it is run with the task's tests.", "code"),
]


def _render(result: ExecutionResult, max_chars: int) -> str:
    parts = [f"status: {result.status} (exit {result.exit_code})"]
    if result.stdout:
        parts.append("stdout:\n" + result.stdout_text[:max_chars])
    if result.stderr:
        parts.append("stderr:\n" + result.stderr_text[:max_chars])
    return "\n".join(parts)


class CodeEnv(Env):
    """Run code in sandboxes, then ``submit`` a solution checked by the task's tests."""

    description: ClassVar[str] = "Code execution in the sandbox pool, with test-checked submissions."

    def __init__(self, *, pool: SandboxPool, loop: asyncio.AbstractEventLoop, timeout_s: float = 10.0,
                 max_output_chars: int = 4000, max_steps: int = 16) -> None:
        self.pool = pool
        self.loop = loop
        self.timeout_s = timeout_s
        self.max_output_chars = max_output_chars
        self.max_steps = max_steps
        self.tests = ""
        self.prompt = ""
        self.steps = 0

    def reset(self, trajectory: Any = None, *, seed: int | None = None) -> StepResult:
        """Start a task: ``trajectory`` may carry ``prompt`` and ``tests``."""
        task = trajectory if isinstance(trajectory, dict) else {}
        self.prompt = str(task.get("prompt", "Write Python code that solves the task, then submit it."))
        self.tests = str(task.get("tests", ""))
        self.steps = 0
        return StepResult(observation={"text": self.prompt})

    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        """Run ``python``/``bash`` code, or ``submit`` a solution (ends the episode)."""
        self.steps += 1
        if tool_name not in ("python", "bash", "submit"):
            return StepResult(observation={"text": f"Error: unknown tool {tool_name!r}; use python, bash or submit"})
        field = "command" if tool_name == "bash" else "code"
        code = arguments.get(field)
        if not isinstance(code, str) or not code.strip():
            return StepResult(observation={"text": f"Error: `{field}` must be a non-empty string"})
        if tool_name == "submit":
            return self._submit(code)
        result = self._run(code, "bash" if tool_name == "bash" else "python")
        done = self.steps >= self.max_steps
        return StepResult(observation={"text": _render(result, self.max_output_chars)}, done=done,
                          info={"status": result.status, "truncated": done})

    def _submit(self, code: str) -> StepResult:
        result = self._run(code + "\n\n" + self.tests if self.tests else code, "python")
        reward = 1.0 if result.ok else 0.0
        text = ("All tests passed." if result.ok else "Tests failed.\n" + _render(result, self.max_output_chars))
        return StepResult(observation={"text": text}, reward=reward, done=True, info={"status": result.status})

    def _run(self, code: str, language: str) -> ExecutionResult:
        future = asyncio.run_coroutine_threadsafe(
            self.pool.execute(code, language=language, timeout_s=self.timeout_s), self.loop)
        return future.result(timeout=self.timeout_s + self.pool.acquire_timeout_s + 10)

    def tools(self) -> list[dict[str, Any]]:
        """The python, bash and submit schemas."""
        return [dict(t) for t in _TOOLS]

    def state(self) -> dict[str, Any]:
        """Steps taken so far."""
        return {"steps": self.steps}
