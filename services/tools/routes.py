"""HTTP routes of the tool service (mounted by the app factory, which adds auth)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Query

from services.tools.deps import MemoryStoreDep, ToolServiceDep
from services.tools.http_tool import HttpToolSpec
from services.tools.memory_store import (
    NAMESPACE_PATTERN,
    MemoryCreate,
    MemoryPage,
    MemoryRead,
    MemorySearchRequest,
    MemorySearchResponse,
)
from services.tools.schemas import (
    ToolBatchRequest,
    ToolBatchResponse,
    ToolCallRequest,
    ToolCallResponse,
    ToolListResponse,
)
from shared.schema import ToolInfo
from shared.web import SessionDep

__all__ = ["memory_router", "router"]

router = APIRouter(prefix="/v1/tools", tags=["tools"])
memory_router = APIRouter(prefix="/v1/memories", tags=["memories"])
Namespace = Annotated[str, Path(pattern=NAMESPACE_PATTERN)]


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


@memory_router.post("/{namespace}", response_model=MemoryRead, status_code=201)
async def write_memory(namespace: Namespace, body: MemoryCreate, store: MemoryStoreDep,
                       session: SessionDep) -> MemoryRead:
    """Store one memory (embedded on write) in a namespace."""
    return await store.add(session, namespace, body)


@memory_router.get("/{namespace}", response_model=MemoryPage)
async def list_memories(namespace: Namespace, store: MemoryStoreDep, session: SessionDep,
                        limit: Annotated[int, Query(ge=1, le=500)] = 50,
                        offset: Annotated[int, Query(ge=0)] = 0) -> MemoryPage:
    """A namespace's memories, newest first."""
    return await store.page(session, namespace, limit=limit, offset=offset)


@memory_router.post("/{namespace}/search", response_model=MemorySearchResponse)
async def search_memories(namespace: Namespace, body: MemorySearchRequest, store: MemoryStoreDep,
                          session: SessionDep) -> MemorySearchResponse:
    """Rank a namespace's memories for a query (cosine, word overlap, importance)."""
    hits = await store.search(session, namespace, body.query, top_k=body.top_k)
    return MemorySearchResponse(namespace=namespace, hits=hits)


@memory_router.delete("/{namespace}/{memory_id}", status_code=204)
async def delete_memory(namespace: Namespace, memory_id: uuid.UUID, store: MemoryStoreDep,
                        session: SessionDep) -> None:
    """Forget one memory."""
    await store.remove(session, namespace, memory_id)
