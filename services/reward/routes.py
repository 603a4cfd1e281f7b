"""HTTP routes of the reward service (thin: parse, call one service function, return a schema)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from services.reward import repository
from services.reward.advantage_service import compute_advantages
from services.reward.deps import functions_client, rollout_client
from services.reward.recording import record_results
from services.reward.rescore import read_progress, start_rescore
from services.reward.schemas import (
    AdvantagesRequest,
    AdvantagesResponse,
    RecordRequest,
    RecordResponse,
    RescoreProgress,
    RescoreRequest,
    RescoreStarted,
    ScoreRequest,
    ScoreResponse,
    SpecCheckRequest,
    SpecCheckResponse,
)
from services.reward.scoring import score_request
from services.reward.spec import check_spec, spec_hash
from shared.schema.reward_spec import JobRewardSummary, StoredReward, StoredRewardPage, StoredRewardQuery
from shared.web import DispatcherDep, SessionDep, SettingsDep, StateDep

__all__ = ["router"]

router = APIRouter(tags=["reward"])

SpecHash = Annotated[str, Path(pattern="^[0-9a-f]{64}$")]


@router.post("/v1/rewards/score", response_model=ScoreResponse)
async def score(body: ScoreRequest, settings: SettingsDep, state: StateDep, request: Request) -> ScoreResponse:
    """Score trajectories with a reward spec; per-trajectory failures are in the results."""
    if not body.spec.functions:
        return await score_request(body, allowed_modules=settings.reward_processor_modules)
    async with functions_client(state, request) as functions:
        return await score_request(body, allowed_modules=settings.reward_processor_modules, functions=functions)


@router.post("/v1/rewards/check", response_model=SpecCheckResponse)
def check(body: SpecCheckRequest) -> SpecCheckResponse:
    """Check a reward spec's component names and params (422 naming the first bad one) and give its hash."""
    check_spec(body.spec)
    return SpecCheckResponse(spec_hash=spec_hash(body.spec))


@router.post("/v1/rewards/record", response_model=RecordResponse)
async def record(body: RecordRequest, session: SessionDep) -> RecordResponse:
    """Keep scores from ``/v1/rewards/score`` for stored trajectories, with provenance (idempotent)."""
    return await record_results(session, body)


@router.post("/v1/rewards/query", response_model=StoredRewardPage)
async def query_scores(body: StoredRewardQuery, session: SessionDep) -> StoredRewardPage:
    """The scores kept for the given trajectories (every spec's, oldest first), with provenance."""
    rows = await repository.read_scores_of(session, body.trajectory_ids, components=body.components)
    return StoredRewardPage(items=[StoredReward(
        trajectory_id=str(r.trajectory_id), job_id=str(r.job_id) if r.job_id else None, component=r.component,
        version=r.version, params=r.params or {}, spec_hash=r.spec_hash, weight=r.weight, score=r.score,
        metrics=r.metrics or {}, status=r.status, error=r.error, created_at=r.created_at) for r in rows])


@router.get("/v1/rewards/summary", response_model=JobRewardSummary)
async def job_summary(job_id: Annotated[uuid.UUID, Query()], session: SessionDep) -> JobRewardSummary:
    """Mean score of each reward component over the scores kept for a rollout job's trajectories."""
    return JobRewardSummary(job_id=str(job_id), components=await repository.component_means(session, job_id))


@router.post("/v1/advantages", response_model=AdvantagesResponse)
def advantages(body: AdvantagesRequest) -> AdvantagesResponse:
    """Advantages and masks for groups of rewards."""
    return compute_advantages(body)


@router.post("/v1/rollouts/{job_id}/rescore", status_code=202, response_model=RescoreStarted)
async def rescore(job_id: uuid.UUID, body: RescoreRequest, session: SessionDep, dispatcher: DispatcherDep,
                  settings: SettingsDep, state: StateDep, request: Request) -> RescoreStarted:
    """Re-score every stored trajectory of a rollout job with a new spec (old scores are kept)."""
    async with rollout_client(state, request) as rollout:
        return await start_rescore(session, dispatcher, job_id, body, batch_size=settings.reward_rescore_batch_size,
                                   rollout=rollout)


@router.get("/v1/rollouts/{job_id}/rescore/{spec_hash}", response_model=RescoreProgress)
async def rescore_status(job_id: uuid.UUID, spec_hash: SpecHash, session: SessionDep, state: StateDep,
                         request: Request) -> RescoreProgress:
    """Progress of a re-scoring run: trajectories scored, failed, skipped and pending."""
    async with rollout_client(state, request) as rollout:
        return await read_progress(session, job_id, spec_hash, rollout=rollout)
