"""FastAPI dependencies of the inference routes (override ``get_engine_holder`` to swap engines)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from services.inference.engine import Engine
from services.inference.service import EngineHolder, get_engine_holder

__all__ = ["EngineDep", "HolderDep", "engine_dependency"]

HolderDep = Annotated[EngineHolder, Depends(get_engine_holder)]


async def engine_dependency(holder: HolderDep) -> Engine:
    """The loaded engine (the model loads on the first request that needs it)."""
    return await holder.get()


EngineDep = Annotated[Engine, Depends(engine_dependency)]
