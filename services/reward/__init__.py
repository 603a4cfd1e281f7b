"""Reward scoring: components, processors, advantages and the scoring service."""

from services.reward.registry import ComponentResult, get_component, list_components, reward_component
from services.reward.service import ScoredTrajectory, score_trajectories, score_trajectory
from services.reward.spec import ComponentSpec, RewardSpec

__all__ = [
    "ComponentResult",
    "ComponentSpec",
    "RewardSpec",
    "ScoredTrajectory",
    "get_component",
    "list_components",
    "reward_component",
    "score_trajectories",
    "score_trajectory",
]
