"""Tool service: tool contracts, the registry, built-in tools and the sandbox pool."""

from services.tools.base import BaseTool, Tool, ToolOutput, truncate_middle
from services.tools.calculator import CalculatorTool, evaluate
from services.tools.code_tools import BashTool, CodeTool, PythonTool
from services.tools.errors import SandboxUnavailable, ToolArgumentsInvalid, UnsafeResultFile
from services.tools.http_tool import HttpTool, HttpToolSpec
from services.tools.manager import ToolManager
from services.tools.memory_search import MemoryHit, MemorySearchTool, MemoryStore, MemoryWriteTool
from services.tools.memory_store import DbMemoryStore
from services.tools.results import ERROR_KINDS, ErrorKind, ExecStatus, ExecutionResult, ToolResult
from services.tools.sandbox_limits import MAX_TIMEOUT_S, SandboxLimits
from services.tools.sandbox_pool import SandboxPool
from services.tools.sandbox_slot import SandboxSlot
from services.tools.service import ToolService, build_default_service

__all__ = [
    "ERROR_KINDS",
    "MAX_TIMEOUT_S",
    "BaseTool",
    "BashTool",
    "CalculatorTool",
    "CodeTool",
    "DbMemoryStore",
    "ErrorKind",
    "ExecStatus",
    "ExecutionResult",
    "HttpTool",
    "HttpToolSpec",
    "MemoryHit",
    "MemorySearchTool",
    "MemoryStore",
    "MemoryWriteTool",
    "PythonTool",
    "SandboxLimits",
    "SandboxPool",
    "SandboxSlot",
    "SandboxUnavailable",
    "Tool",
    "ToolArgumentsInvalid",
    "ToolManager",
    "ToolOutput",
    "ToolResult",
    "ToolService",
    "UnsafeResultFile",
    "build_default_service",
    "evaluate",
    "truncate_middle",
]
