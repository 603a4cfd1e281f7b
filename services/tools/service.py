"""Tool service: dispatch one call or a batch, and register HTTP-backed user tools."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import httpx

from services.tools.base import BaseTool
from services.tools.calculator import CalculatorTool
from services.tools.code_tools import BashTool, PythonTool
from services.tools.context import DEFAULT_SESSION, current_session
from services.tools.http_tool import HttpTool, HttpToolSpec
from services.tools.manager import ToolManager
from services.tools.memory_search import MemoryBackend, MemorySearchTool, MemoryStore, MemoryWriteTool
from services.tools.results import ToolResult
from shared.errors import Conflict
from shared.sandbox.pool import SandboxPool
from shared.schema import ToolInfo

__all__ = ["ToolService", "build_default_service"]


class ToolService:
    """A ToolManager plus the policy around it (sessions, batches, user tools)."""

    def __init__(
        self,
        manager: ToolManager,
        *,
        http_client: httpx.AsyncClient | None = None,
        max_concurrency: int = 16,
    ) -> None:
        self.manager = manager
        self.http_client = http_client
        self._builtin = frozenset(manager.names())
        self._limit = asyncio.Semaphore(max_concurrency)

    def tools(self) -> list[ToolInfo]:
        """Schemas of every tool the service can call."""
        return self.manager.tool_infos()

    async def call(self, tool_call: Any, *, session_id: str | None = None) -> ToolResult:
        """Run one OpenAI tool call; failures come back as an error result, never raised."""
        token = current_session.set(session_id or DEFAULT_SESSION)
        try:
            async with self._limit:
                return await self.manager.call_structured(tool_call)
        finally:
            current_session.reset(token)

    async def call_batch(
        self, tool_calls: Sequence[Any], *, session_id: str | None = None
    ) -> list[ToolResult]:
        """Run calls concurrently; one result per call, in order, each with its own status."""
        return list(
            await asyncio.gather(*(self.call(c, session_id=session_id) for c in tool_calls))
        )

    def register_http_tool(self, spec: HttpToolSpec) -> ToolInfo:
        """Register (or replace) an HTTP tool; built-in names cannot be taken."""
        if spec.name in self._builtin:
            raise Conflict(f"{spec.name!r} is a built-in tool; choose another name", param="name")
        tool = HttpTool(spec, client=self.http_client)
        self.manager.register(tool)
        return tool.tool_info()


def build_default_service(
    pool: SandboxPool | None,
    *,
    memory: MemoryBackend | None = None,
    http_client: httpx.AsyncClient | None = None,
) -> ToolService:
    """The service with the built-in tools: python, bash, calculator, memory_search, memory_write.

    With no sandbox pool (bubblewrap missing and ``tools_sandbox=optional``) the code
    tools are left out rather than run unsandboxed.
    """
    store = memory if memory is not None else MemoryStore()
    code_tools: list[BaseTool] = [PythonTool(pool), BashTool(pool)] if pool is not None else []
    tools = [*code_tools, CalculatorTool(), MemorySearchTool(store), MemoryWriteTool(store)]
    return ToolService(ToolManager(tools), http_client=http_client)
