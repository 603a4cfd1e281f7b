"""The sandboxed built-in tools a rollout shard needs, on a pool the shard owns."""

from __future__ import annotations

from typing import Any

from services.tools.base import Tool
from services.tools.code_tools import BashTool, PythonTool
from services.tools.memory_search import MemorySearchTool, MemoryStore
from services.tools.sandbox_pool import SandboxPool
from shared.settings import Settings

__all__ = ["sandbox_tools"]


async def sandbox_tools(names: list[str], settings: Settings) -> tuple[list[Tool], SandboxPool | None]:
    """Tools for ``names`` (python, bash, memory_search) and the pool to close after the shard."""
    tools: list[Tool] = [MemorySearchTool(MemoryStore())] if "memory_search" in names else []
    if not {"python", "bash"} & set(names):
        return tools, None
    pool = await SandboxPool.from_settings(settings).start()
    makers: dict[str, Any] = {"python": PythonTool, "bash": BashTool}
    tools.extend(makers[n](pool) for n in names if n in makers)
    return tools, pool
