"""HTTP routes of the functions service (thin: parse, call one service function, return a schema)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import PlainTextResponse

from services.functions.deps import FunctionsDep
from services.functions.errors import PackageInvalid
from services.functions.schemas import PoolsPage, RewardCall, RolloutCall
from shared.clients.functions import FunctionPackage
from shared.schema.functions import PACKAGE_ID_PATTERN, RewardOutput, RolloutOutput

__all__ = ["router"]

router = APIRouter(tags=["functions"])

PackageId = Annotated[str, Path(pattern=PACKAGE_ID_PATTERN)]


@router.post("/v1/functions", response_model=FunctionPackage, status_code=202)
async def upload_package(request: Request, functions: FunctionsDep) -> FunctionPackage:
    """Upload a zipped workspace (``functions/`` + ``requirements.txt``); its build starts."""
    data = await request.body()
    if not data:
        raise PackageInvalid("the request body is empty: send the workspace zip as the body")
    return await functions.store.upload(data)


@router.get("/v1/functions/pools", response_model=PoolsPage)
async def list_pools(functions: FunctionsDep) -> PoolsPage:
    """Every component pool: instances, in-flight and queued calls, scale events."""
    return PoolsPage(pools=functions.pool_stats())


@router.get("/v1/functions/{package_id}", response_model=FunctionPackage)
async def read_package(package_id: PackageId, functions: FunctionsDep) -> FunctionPackage:
    """A package's build status, its error when it failed, the processors it offers."""
    return await functions.store.get(package_id)


@router.get("/v1/functions/{package_id}/log", response_class=PlainTextResponse)
async def read_build_log(package_id: PackageId, functions: FunctionsDep) -> PlainTextResponse:
    """The package's build log (pip's output and the import check)."""
    return PlainTextResponse(functions.store.read_log(package_id))


@router.post("/v1/functions/{package_id}/rollout", response_model=RolloutOutput)
async def call_rollout(package_id: PackageId, body: RolloutCall, functions: FunctionsDep) -> RolloutOutput:
    """Run one rollout on the component's worker instances; failures are FAILED outputs."""
    return await functions.call_rollout(package_id, body.component, body.input)


@router.post("/v1/functions/{package_id}/reward", response_model=RewardOutput)
async def call_reward(package_id: PackageId, body: RewardCall, functions: FunctionsDep) -> RewardOutput:
    """Score one agent output on the reward component's worker instances."""
    return await functions.call_reward(package_id, body.component, body.input)
