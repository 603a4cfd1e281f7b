"""Read-only REST views of rollouts: job list and statistics, groups, one trajectory, search."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request

from services.rollout import browse
from services.rollout.browse import (
    GroupDetail,
    GroupPage,
    JobStats,
    RolloutJobPage,
    TrajectoryDetail,
    TrajectoryQuery,
    TrajectorySearchPage,
)
from services.rollout.deps import reward_client
from services.rollout.schemas import JobStatus
from shared.web import SessionDep, StateDep

__all__ = ["browse_router"]

browse_router = APIRouter(tags=["rollout"])
Offset = Annotated[int, Query(ge=0)]
Limit = Annotated[int, Query(ge=1, le=500)]


@browse_router.get("/v1/rollouts", response_model=RolloutJobPage)
async def list_rollouts(session: SessionDep, offset: Offset = 0, limit: Limit = 50,
                        status: Annotated[JobStatus | None, Query()] = None) -> RolloutJobPage:
    """A page of rollout jobs, newest first, with their mean total reward."""
    return await browse.list_jobs(session, offset=offset, limit=limit, status=status)


@browse_router.get("/v1/rollouts/{job_id}/stats", response_model=JobStats)
async def read_rollout_stats(job_id: uuid.UUID, session: SessionDep) -> JobStats:
    """Reward histogram, lengths, per-turn latency percentiles, stop reasons, tokens/s and failures."""
    return await browse.job_stats(session, job_id)


@browse_router.get("/v1/rollouts/{job_id}/groups", response_model=GroupPage)
async def list_rollout_groups(job_id: uuid.UUID, session: SessionDep, offset: Offset = 0, limit: Limit = 100,
                              status: Annotated[str | None, Query(max_length=20)] = None) -> GroupPage:
    """A page of the job's groups in task order."""
    return await browse.list_groups(session, job_id, offset=offset, limit=limit, status=status)


@browse_router.get("/v1/rollouts/{job_id}/groups/{group_id}", response_model=GroupDetail)
async def read_rollout_group(job_id: uuid.UUID, group_id: uuid.UUID, session: SessionDep, state: StateDep,
                             request: Request) -> GroupDetail:
    """One group with every stored member side by side."""
    async with reward_client(state, request) as rewards:
        return await browse.read_group(session, rewards, job_id, group_id)


@browse_router.get("/v1/trajectories", response_model=TrajectorySearchPage)
async def search_trajectories(
    session: SessionDep,
    job_id: Annotated[uuid.UUID | None, Query()] = None,
    task_id: Annotated[str | None, Query(max_length=300)] = None,
    stop_reason: Annotated[str | None, Query(max_length=30)] = None,
    min_reward: Annotated[float | None, Query()] = None,
    max_reward: Annotated[float | None, Query()] = None,
    tool: Annotated[str | None, Query(max_length=200)] = None,
    q: Annotated[str | None, Query(max_length=500)] = None,
    offset: Offset = 0,
    limit: Limit = 50,
) -> TrajectorySearchPage:
    """Stored trajectories by job, task, stop reason, reward range, tool called and text, newest first."""
    query = TrajectoryQuery(job_id=job_id, task_id=task_id, stop_reason=stop_reason, min_reward=min_reward,
                            max_reward=max_reward, tool=tool, q=q)
    return await browse.search_trajectories(session, query, offset=offset, limit=limit)


@browse_router.get("/v1/trajectories/{trajectory_id}", response_model=TrajectoryDetail)
async def read_trajectory(trajectory_id: uuid.UUID, session: SessionDep, state: StateDep,
                          request: Request) -> TrajectoryDetail:
    """One stored trajectory with token data, steps and every reward with its provenance."""
    async with reward_client(state, request) as rewards:
        return await browse.read_trajectory(session, rewards, trajectory_id)
