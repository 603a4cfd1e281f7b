"""User reward processors for the REST tests: one that scores, raises, hangs, or returns NaN."""

from __future__ import annotations

import time

from shared.functions import Reward, RewardInput, RewardOutput


class LengthProcessor:
    """Scores 1.0 per message, scaled (a well-behaved processor)."""

    def __init__(self, scale: float = 0.1) -> None:
        self.scale = scale

    def process(self, inp: RewardInput) -> RewardOutput:
        """Score by message count."""
        return RewardOutput(reward=Reward(reward_score=self.scale * len(inp.agent_output.messages),
                                          reward_metrics={"messages": 2.0}))


class RaisingProcessor:
    """Raises for trajectories whose user asks for it."""

    def process(self, inp: RewardInput) -> RewardOutput:
        """Raise on a marked trajectory, score 1 otherwise."""
        if inp.agent_output.messages and "boom" in str(inp.agent_output.messages[0].get("content")):
            raise RuntimeError("boom from user code")
        return RewardOutput(reward=Reward(reward_score=1.0))


class HangingProcessor:
    """Never answers within any sensible timeout."""

    def process(self, inp: RewardInput) -> RewardOutput:
        """Sleep past the caller's timeout."""
        time.sleep(1.5)
        return RewardOutput(reward=Reward(reward_score=1.0))


class NaNProcessor:
    """Returns a NaN score."""

    def process(self, inp: RewardInput) -> dict[str, object]:
        """A non-finite score (as a plain dict: the contract is validated where it is received)."""
        return {"reward": {"reward_score": float("nan")}, "status": "SUCCESS"}
