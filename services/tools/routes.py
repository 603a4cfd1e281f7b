"""HTTP routes of the tool service (mounted by the app factory, which adds auth)."""

from __future__ import annotations

from fastapi import APIRouter

from services.tools.deps import ToolServiceDep
from services.tools.http_tool import HttpToolSpec
from services.tools.schemas import (
    ToolBatchRequest,
    ToolBatchResponse,
    ToolCallRequest,
    ToolCallResponse,
    ToolListResponse,
)
from shared.schema import ToolInfo

__all__ = ["router"]

router = APIRouter(prefix="/v1/tools", tags=["tools"])


@router.get("", response_model=ToolListResponse)
async def list_tools(service: ToolServiceDep) -> ToolListResponse:
    """List every tool as an OpenAI function-tool schema."""
    return ToolListResponse(tools=service.tools())


@router.post("/call", response_model=ToolCallResponse)
async def call_tool(body: ToolCallRequest, service: ToolServiceDep) -> ToolCallResponse:
    """Run one OpenAI tool call."""
    return ToolCallResponse.of(await service.call(body.tool_call, session_id=body.session_id))


@router.post("/call_batch", response_model=ToolBatchResponse)
async def call_tool_batch(body: ToolBatchRequest, service: ToolServiceDep) -> ToolBatchResponse:
    """Run several tool calls concurrently; each gets its own status."""
    results = await service.call_batch(body.tool_calls, session_id=body.session_id)
    return ToolBatchResponse(results=[ToolCallResponse.of(r) for r in results])


@router.post("/register", response_model=ToolInfo, status_code=201)
async def register_tool(body: HttpToolSpec, service: ToolServiceDep) -> ToolInfo:
    """Register an HTTP-backed tool by URL and JSON Schema."""
    return service.register_http_tool(body)
