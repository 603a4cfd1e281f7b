"""HTTP routes of the rollout service (thin: parse, call the service, return a schema or a stream)."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from services.rollout import service
from services.rollout.schemas import RewardsKept, RewardTotals, RolloutJobCreate, RolloutJobRead, TrajectoryPage
from shared.web import DispatcherDep, SessionDep, SettingsDep, StateDep

__all__ = ["router"]

router = APIRouter(tags=["rollout"])


@router.post("/v1/rollouts", status_code=202, response_model=RolloutJobRead)
async def create_rollout(body: RolloutJobCreate, request: Request, session: SessionDep, dispatcher: DispatcherDep,
                         settings: SettingsDep, state: StateDep) -> RolloutJobRead:
    """Start a rollout job: one group of ``group_size`` trajectories per task."""
    # The caller's own key asks the tools service whether it offers the job's tools.
    auth = request.headers.get("authorization", "")
    await service.check_services(body, state, api_key=auth[7:].strip() if auth[:7].lower() == "bearer " else None)
    return await service.create_job(session, dispatcher, body, processor_modules=settings.rollout_processor_modules,
                                    reward_modules=settings.reward_processor_modules)


@router.get("/v1/rollouts/{job_id}", response_model=RolloutJobRead)
async def read_rollout(job_id: uuid.UUID, session: SessionDep) -> RolloutJobRead:
    """A job's status, counts per stop reason and progress."""
    return await service.read_job(session, job_id)


@router.post("/v1/rollouts/{job_id}/cancel", response_model=RolloutJobRead)
async def cancel_rollout(job_id: uuid.UUID, session: SessionDep) -> RolloutJobRead:
    """Ask the job to stop; it reads ``cancelled`` once in-flight work has stopped."""
    return await service.cancel_job(session, job_id)


@router.get("/v1/rollouts/{job_id}/trajectories", response_model=TrajectoryPage)
async def read_rollout_trajectories(
    job_id: uuid.UUID,
    session: SessionDep,
    state: StateDep,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    format: Annotated[Literal["json", "jsonl"], Query()] = "json",
) -> TrajectoryPage | StreamingResponse:
    """A page of stored trajectories as JSON, or all of them streamed as JSON lines."""
    if format == "jsonl":
        await service.read_job(session, job_id)  # 404 before the stream starts
        return StreamingResponse(service.stream_trajectories(state.sessionmaker, job_id),
                                 media_type="application/x-ndjson")
    return await service.read_trajectories(session, job_id, offset=offset, limit=limit)


@router.post("/v1/rollouts/{job_id}/rewards", response_model=RewardsKept)
async def keep_rollout_rewards(job_id: uuid.UUID, body: RewardTotals, session: SessionDep) -> RewardsKept:
    """Keep the reward service's newest totals as the job's trajectories' rewards (sent after a re-score)."""
    return await service.keep_rewards(session, job_id, body)


@router.get("/v1/rollouts/{job_id}/events")
async def rollout_events(job_id: uuid.UUID, session: SessionDep, state: StateDep) -> StreamingResponse:
    """Server-sent events: ``progress``, ``group`` per stored group, then ``end`` with the status."""
    await service.read_job(session, job_id)  # 404 before the stream starts
    stream = service.job_events(state.sessionmaker, job_id, poll_s=state.settings.rollout_poll_s)
    return StreamingResponse(stream, media_type="text/event-stream", headers={"cache-control": "no-cache"})
