"""Tool contracts: the minimal ``Tool`` and the schema-validated ``BaseTool``.

A ``Tool`` answers ``tool(tool_name, arguments) -> str`` and describes itself
with ``tool_info()``. ``arun`` is the async twin that also reports an error
kind, so a caller keeps a structured outcome beside the text the model sees.
``BaseTool`` adds JSON Schema validation, an async ``execute`` to override,
and ``format_output`` (key-field extraction, then middle truncation).
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from pydantic import BaseModel

from services.tools.errors import ToolArgumentsInvalid
from services.tools.results import ErrorKind
from shared.schema import FunctionSpec, ToolInfo

__all__ = ["BaseTool", "Tool", "ToolOutput", "tool_info_of", "truncate_middle"]


def tool_info_of(tool: Any) -> ToolInfo:
    """The ``ToolInfo`` of anything with ``tool_info()``: a model, or the documented OpenAI dict.

    The seed API documents ``tool_info()`` returning a plain ``{"type": "function",
    "function": {...}}`` dict (``EnvTool`` does too); both forms are accepted everywhere.
    """
    info = tool.tool_info()
    if isinstance(info, ToolInfo):
        return info
    if isinstance(info, BaseModel):
        info = info.model_dump()
    try:
        return ToolInfo.model_validate(info)
    except ValueError as exc:
        raise ValueError(f"{type(tool).__name__}.tool_info() is not an OpenAI function-tool schema: {exc}") from None


def truncate_middle(text: str, max_chars: int) -> str:
    """Keep the head and tail of ``text`` within ``max_chars``, saying how much was cut."""
    if len(text) <= max_chars:
        return text
    cut = len(text) - max_chars
    head = max_chars // 2
    return f"{text[:head]}\n...[{cut} chars truncated]...\n{text[len(text) - (max_chars - head) :]}"


class ToolOutput(BaseModel):
    """What ``execute`` may return to flag a failed run while still showing output."""

    value: Any
    error_kind: ErrorKind | None = None


class Tool(ABC):
    """Anything callable as ``tool(tool_name, arguments) -> str`` with an OpenAI schema."""

    @abstractmethod
    def tool_info(self) -> ToolInfo | dict[str, Any]:
        """The OpenAI function-tool schema (a ``ToolInfo`` or the same as a plain dict)."""

    @abstractmethod
    def __call__(self, tool_name: str, arguments: Any) -> str:
        """Run the tool and return the text the model sees."""

    @property
    def name(self) -> str:
        """The tool's function name."""
        return tool_info_of(self).name

    async def arun(self, tool_name: str, arguments: Any) -> tuple[str, ErrorKind | None]:
        """Async run returning (text, error kind or None); override when the tool does I/O."""
        return await asyncio.to_thread(self, tool_name, arguments), None

    async def acall(self, tool_name: str, arguments: Any) -> str:
        """Async twin of ``__call__``."""
        text, _ = await self.arun(tool_name, arguments)
        return text


class BaseTool(Tool):
    """A tool with a JSON Schema for its arguments. Override ``execute``."""

    # Plain class attributes: subclasses set them on the class, HTTP tools per instance.
    function_name: str = ""
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    # Output fields shown to the model when ``execute`` returns a mapping; empty = all.
    key_fields: tuple[str, ...] = ()
    max_output_chars: int = 8000

    def get_schema(self) -> ToolInfo:
        """The OpenAI schema built from ``function_name``, ``description`` and ``parameters``."""
        spec = FunctionSpec(
            name=self.function_name, description=self.description, parameters=self.parameters
        )
        return ToolInfo(function=spec)

    def tool_info(self) -> ToolInfo:
        """Same as ``get_schema``."""
        return self.get_schema()

    def validate(self, arguments: Any) -> dict[str, Any]:
        """Check ``arguments`` against ``parameters``; raise ToolArgumentsInvalid if they fail."""
        error = best_match(Draft202012Validator(self.parameters).iter_errors(arguments))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            raise ToolArgumentsInvalid(
                f"arguments invalid at {where}: {error.message}", param=where
            )
        if not isinstance(arguments, dict):
            raise ToolArgumentsInvalid("arguments must be a JSON object")
        return arguments

    @abstractmethod
    async def execute(self, arguments: dict[str, Any]) -> Any:
        """Do the work on validated arguments; may return a ``ToolOutput`` to flag a failure."""

    def format_output(self, result: Any) -> str:
        """Model-facing text: key fields of a mapping, JSON for other non-strings, truncated."""
        if isinstance(result, dict) and self.key_fields:
            result = {k: result[k] for k in self.key_fields if k in result}
        if not isinstance(result, str):
            result = json.dumps(result, ensure_ascii=False, default=str)
        return truncate_middle(result, self.max_output_chars)

    async def arun(self, tool_name: str, arguments: Any) -> tuple[str, ErrorKind | None]:
        """Validate, execute, format; returns (text, error kind or None)."""
        result = await self.execute(self.validate(arguments))
        if isinstance(result, ToolOutput):
            return self.format_output(result.value), result.error_kind
        return self.format_output(result), None

    def __call__(self, tool_name: str, arguments: Any) -> str:
        """Blocking run for callers without an event loop (use ``acall`` inside one)."""
        return asyncio.run(self.acall(tool_name, arguments))
