"""Tool service: tool contracts, the registry, built-in tools and the sandbox pool."""

from services.tools.base import BaseTool, Tool, ToolOutput, truncate_middle
from services.tools.calculator import CalculatorTool, evaluate
from services.tools.code_tools import BashTool, CodeTool, PythonTool
from services.tools.errors import ToolArgumentsInvalid
from services.tools.http_tool import HttpTool, HttpToolSpec
from services.tools.manager import ToolManager
from services.tools.memory_search import MemoryHit, MemorySearchTool, MemoryStore, MemoryWriteTool
from services.tools.memory_store import DbMemoryStore
from services.tools.results import ERROR_KINDS, ErrorKind, ToolResult
from services.tools.service import ToolService, build_default_service
from shared.errors import SandboxUnavailable, UnsafeResultFile
from shared.sandbox.limits import MAX_TIMEOUT_S, SandboxLimits
from shared.sandbox.pool import SandboxPool
from shared.sandbox.result import ExecStatus, ExecutionResult
from shared.sandbox.slot import SandboxSlot

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
