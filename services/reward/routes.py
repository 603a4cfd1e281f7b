"""HTTP routes of the reward service (mounted by the app factory)."""

from __future__ import annotations

from fastapi import APIRouter

from services.reward.advantage_service import compute_advantages
from services.reward.errors import RewardSpecError
from services.reward.schemas import AdvantagesRequest, AdvantagesResponse, ScoreRequest, ScoreResponse
from services.reward.service import score_trajectories

__all__ = ["router"]

router = APIRouter(tags=["reward"])


@router.post("/v1/rewards/score", response_model=ScoreResponse)
def score(body: ScoreRequest) -> ScoreResponse:
    """Score trajectories with a reward spec; per-trajectory failures are in the results."""
    if body.ground_truths is not None and len(body.ground_truths) != len(body.trajectories):
        raise RewardSpecError("ground_truths must have one entry per trajectory", param="ground_truths")
    results = score_trajectories(body.trajectories, body.spec, ground_truths=body.ground_truths)
    return ScoreResponse(results=results)


@router.post("/v1/advantages", response_model=AdvantagesResponse)
def advantages(body: AdvantagesRequest) -> AdvantagesResponse:
    """Advantages and masks for groups of rewards."""
    return compute_advantages(body)
