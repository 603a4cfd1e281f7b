"""Dependencies of the functions routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from services.functions.service import FunctionsService
from shared.errors import ServiceUnavailable
from shared.web.state import get_app_state

__all__ = ["FunctionsDep", "get_functions"]


def get_functions(request: Request) -> FunctionsService:
    """The FunctionsService the app's startup created."""
    service = get_app_state(request.app).resources.get("functions")
    if service is None:
        raise ServiceUnavailable("the functions service is not started")
    return service  # type: ignore[no-any-return]


FunctionsDep = Annotated[FunctionsService, Depends(get_functions)]
