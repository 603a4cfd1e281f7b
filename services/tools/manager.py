"""ToolManager: a name → tool registry that dispatches OpenAI tool calls.

A tool is a ``Tool`` or anything shaped like one (``tool_info()`` plus
``__call__(tool_name, arguments) -> str``, e.g. an ``EnvTool``), whose
``tool_info()`` may return a ``ToolInfo`` or the documented plain dict; so
``ToolManager(EnvTool.from_env(env))`` works as the seed shows it.

Dispatch never raises for a bad call or a failing tool: the model sees a
string starting with ``Error:`` and ``call_structured`` also returns the
error kind and latency, so callers need not parse the prefix.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from services.tools.base import Tool, tool_info_of
from services.tools.errors import ToolArgumentsInvalid
from services.tools.results import ErrorKind, ToolResult
from shared.errors import SandboxUnavailable, UnsafeResultFile, UpstreamError
from shared.sandbox.output import safe_text
from shared.schema import ToolInfo

__all__ = ["ToolManager"]

log = logging.getLogger(__name__)

_EXC_KINDS: tuple[tuple[type[Exception], ErrorKind], ...] = (
    (ToolArgumentsInvalid, "invalid_arguments"),
    (SandboxUnavailable, "pool_exhausted"),
    (UnsafeResultFile, "unsafe_file"),
    (UpstreamError, "upstream_error"),
)


class _BadCall(Exception):
    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _tool_name_of(tool: Any) -> str:
    if not callable(getattr(tool, "tool_info", None)) or not callable(tool):
        raise TypeError(f"{type(tool).__name__} is not a tool: it needs tool_info() and __call__(name, arguments)")
    name = tool_info_of(tool).name
    if not name:
        raise ValueError("every tool must expose a non-empty function name in tool_info()")
    return name


def _parse_arguments(raw: Any) -> Any:
    if raw is None:
        return {}
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise _BadCall("invalid_json", f"arguments are not valid JSON ({exc})") from None
    if isinstance(raw, dict):
        return raw
    raise _BadCall(
        "invalid_json", f"arguments must be a JSON string or object, not {type(raw).__name__}"
    )


async def _run(tool: Any, name: str, arguments: Any) -> tuple[str, ErrorKind | None]:
    """A ``Tool`` runs through ``arun``; a tool-shaped object is called in a worker thread."""
    if isinstance(tool, Tool):
        return await tool.arun(name, arguments)
    return str(await asyncio.to_thread(tool, name, arguments)), None


class ToolManager:
    """Registry of tools keyed by function name, in insertion order."""

    def __init__(self, tools: Mapping[str, Any] | Iterable[Any] | None = None) -> None:
        self._tools: dict[str, Any] = {}
        if tools is None:
            return
        if isinstance(tools, Mapping):
            for name, tool in tools.items():
                _tool_name_of(tool)  # refuse a non-tool now, not at the first call
                self._tools[name] = tool  # taken as given: keys are the names
        elif isinstance(tools, (str, bytes)) or not isinstance(tools, Iterable):
            raise TypeError(f"tools must be a list, tuple, dict or None, not {type(tools).__name__}")
        else:
            for tool in tools:
                self.register(tool)

    def register(self, tool: Any) -> None:
        """Add ``tool`` under its function name (a later tool with that name wins)."""
        self._tools[_tool_name_of(tool)] = tool

    def unregister(self, name: str) -> Any | None:
        """Remove and return the tool called ``name``, or None."""
        return self._tools.pop(name, None)

    def get(self, name: str) -> Any | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Registered names in insertion order."""
        return list(self._tools)

    def copy(self) -> ToolManager:
        """A new manager sharing the same tool objects."""
        return ToolManager(dict(self._tools))

    def tool_infos(self) -> list[ToolInfo]:
        """The OpenAI schema of every tool."""
        return [tool_info_of(tool) for tool in self._tools.values()]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def _resolve(self, tool_call: Any) -> tuple[Any, str, Any]:
        if not isinstance(tool_call, dict):
            raise _BadCall(
                "invalid_call", f"tool_call must be an object, got {type(tool_call).__name__}"
            )
        function = tool_call.get("function")
        if not isinstance(function, dict):
            raise _BadCall("invalid_call", "tool_call.function is missing or not an object")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise _BadCall("invalid_call", "tool_call.function.name is missing or empty")
        tool = self._tools.get(name)
        if tool is None:
            available = ", ".join(sorted(self._tools)) or "(none)"
            raise _BadCall("unknown_tool", f"unknown tool {name!r}; available tools: {available}")
        return tool, name, _parse_arguments(function.get("arguments"))

    async def call_structured(self, tool_call: Any) -> ToolResult:
        """Dispatch one OpenAI tool call; the outcome (never an exception) with kind and latency."""
        start = time.perf_counter()
        if isinstance(tool_call, BaseModel):
            tool_call = tool_call.model_dump()
        call_id = str(tool_call.get("id") or "") if isinstance(tool_call, dict) else ""
        name = ""
        try:
            tool, name, arguments = self._resolve(tool_call)
            text, kind = await _run(tool, name, arguments)
        except _BadCall as exc:
            text, kind = f"Error: {exc}", exc.kind
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a failing tool is data for the model, not a crash
            text, kind = self._describe_failure(name, exc)
        return ToolResult(
            tool_call_id=call_id,
            name=name,
            ok=kind is None,
            error_kind=kind,
            content=safe_text(text),  # NUL / lone surrogates from any tool stay storable
            latency_s=time.perf_counter() - start,
        )

    @staticmethod
    def _describe_failure(name: str, exc: Exception) -> tuple[str, ErrorKind]:
        kind: ErrorKind = next(
            (k for cls, k in _EXC_KINDS if isinstance(exc, cls)), "tool_exception"
        )
        if kind == "tool_exception":
            log.warning("tool %r raised %s", name, type(exc).__name__, exc_info=exc)
        return f"Error: tool {name!r} failed with {type(exc).__name__}: {exc}", kind

    async def acall(self, tool_call: Any) -> str:
        """Async dispatch returning only the model-facing text."""
        return (await self.call_structured(tool_call)).content

    def __call__(self, tool_call: Any) -> str:
        """Blocking dispatch for callers without a running event loop."""
        return asyncio.run(self.call_structured(tool_call)).content
