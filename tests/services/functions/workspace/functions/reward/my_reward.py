"""The reward processor: 1.0 when the last assistant turn calls the expected tool with the expected arguments."""

from __future__ import annotations

import json
from typing import Any

from shared.functions import AbstractRewardProcessor, Reward, RewardInput, RewardOutput, TaskStatus


def _calls(message: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for raw in message.get("tool_calls") or []:
        func = raw.get("function", raw)
        args = func.get("arguments") or {}
        args = json.loads(args) if isinstance(args, str) else args
        out.append((str(func.get("name", "")), json.dumps(args, sort_keys=True)))
    return sorted(out)


class MyRewardProcessor(AbstractRewardProcessor):
    """Scores tool-call correctness; a failed rollout is FAILED with score 0, never scored."""

    async def process(self, input: RewardInput) -> RewardOutput:  # noqa: A002 - the reference's name
        messages = input.agent_output.messages or [{}]
        if str(messages[-1].get("content") or "").startswith("ROLLOUT_ERROR:"):
            return RewardOutput(reward=Reward(reward_score=0.0), status=TaskStatus.FAILED, error="rollout failed")
        truth = input.truth() or {}
        truth = json.loads(truth) if isinstance(truth, str) else truth
        expected = sorted((c["name"], json.dumps(c.get("arguments") or {}, sort_keys=True))
                          for c in truth.get("tool_calls") or [])
        assistant = next((m for m in reversed(messages) if m.get("role") == "assistant"), {})
        got = _calls(assistant)
        name_ok = [n for n, _ in got] == [n for n, _ in expected] and bool(expected)
        score = 1.0 if got == expected and expected else 0.0
        return RewardOutput(reward=Reward(reward_score=score, reward_metrics={"tool_name_accuracy": float(name_ok)}))


class LengthReward(AbstractRewardProcessor):
    """A second component: 1.0 for a reply of at most ``OPD_MAX_CHARS`` characters (env-configured)."""

    def setup(self) -> None:
        import os

        self.max_chars = int(os.environ.get("OPD_MAX_CHARS", "200"))

    async def process(self, input: RewardInput) -> RewardOutput:  # noqa: A002 - the reference's name
        last = (input.agent_output.messages or [{}])[-1]
        short = len(str(last.get("content") or "")) <= self.max_chars
        return RewardOutput(reward=Reward(reward_score=1.0 if short else 0.0))
