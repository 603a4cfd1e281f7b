"""Request and response bodies of the tool routes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from services.tools.results import ErrorKind, ToolResult
from shared.schema import ToolInfo

__all__ = [
    "ToolBatchRequest",
    "ToolBatchResponse",
    "ToolCallRequest",
    "ToolCallResponse",
    "ToolListResponse",
]

MAX_BATCH = 256


class ToolListResponse(BaseModel):
    """Every callable tool as an OpenAI function-tool schema."""

    object: Literal["list"] = "list"
    tools: list[ToolInfo]


class ToolCallRequest(BaseModel):
    """One OpenAI tool call; kept raw so a malformed call gets a per-call error, not a 422."""

    tool_call: Any
    session_id: str | None = Field(None, max_length=200)


class ToolBatchRequest(BaseModel):
    """Several tool calls run concurrently."""

    tool_calls: list[Any] = Field(max_length=MAX_BATCH)
    session_id: str | None = Field(None, max_length=200)


class ToolCallResponse(BaseModel):
    """The model-facing content plus status, error kind and latency."""

    tool_call_id: str
    name: str
    status: Literal["ok", "error"]
    error_kind: ErrorKind | None
    content: str
    latency_s: float

    @classmethod
    def of(cls, result: ToolResult) -> ToolCallResponse:
        """Build from a service result."""
        return cls(
            tool_call_id=result.tool_call_id,
            name=result.name,
            status=result.status,
            error_kind=result.error_kind,
            content=result.content,
            latency_s=result.latency_s,
        )


class ToolBatchResponse(BaseModel):
    """One response per call, in request order."""

    results: list[ToolCallResponse]
