"""Dependencies of the tool routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from services.tools.memory_store import DbMemoryStore
from services.tools.service import ToolService
from shared.errors import ServiceUnavailable

__all__ = ["MemoryStoreDep", "ToolServiceDep", "get_memory_store", "get_tool_service"]


def get_tool_service(request: Request) -> ToolService:
    """The ToolService the app factory put on ``app.state.tool_service``."""
    service = getattr(request.app.state, "tool_service", None)
    if service is None:
        raise ServiceUnavailable("the tool service is not started")
    return service  # type: ignore[no-any-return]


ToolServiceDep = Annotated[ToolService, Depends(get_tool_service)]


def get_memory_store(request: Request) -> DbMemoryStore:
    """The database-backed memory store the app factory put on ``app.state.memory_store``."""
    store = getattr(request.app.state, "memory_store", None)
    if store is None:
        raise ServiceUnavailable("the memory store is not started")
    return store  # type: ignore[no-any-return]


MemoryStoreDep = Annotated[DbMemoryStore, Depends(get_memory_store)]
