"""Function components for the OPD job tests, written as the reference writes them (loaded by classpath).

``OneTurnChat`` samples one reply from the student through the gateway with the
official ``openai`` client; a task whose ``rollout_extra`` says ``crash`` makes it
raise (that member must be stored FAILED while the job goes on). The reward
processors score the reply against the task's ground truth and its length.
"""

from __future__ import annotations

from typing import Any

from openai import AsyncOpenAI

from shared.functions import (
    AbstractRewardProcessor,
    AbstractRolloutProcessor,
    AgentOutput,
    Reward,
    RewardInput,
    RewardOutput,
    RolloutInput,
    RolloutOutput,
    TaskStatus,
)


class OneTurnChat(AbstractRolloutProcessor):
    """One student turn at ``model_resource.base_url`` with the job's sampling params."""

    async def process(self, input: RolloutInput) -> RolloutOutput:  # noqa: A002 - the reference's name
        if input.rollout_extra.get("crash"):
            raise RuntimeError("tool backend unreachable")
        resource, sampling = input.model_resource, input.sampling_params
        client = AsyncOpenAI(api_key=resource.api_key, base_url=resource.base_url, http_client=input.http_client,
                             max_retries=0)
        async with client:
            reply = await client.chat.completions.create(
                model=resource.model_name, messages=input.messages,  # type: ignore[arg-type]
                max_tokens=int(sampling.get("max_tokens", 8)), temperature=float(sampling.get("temperature", 1.0)))
        message = {"role": "assistant", "content": reply.choices[0].message.content or ""}
        return RolloutOutput(agent_output=AgentOutput(messages=[*input.messages, message],
                                                      rollout_extra=input.rollout_extra))


def _reply(inp: RewardInput) -> str:
    return next((str(m.get("content") or "") for m in reversed(inp.agent_output.messages)
                 if m.get("role") == "assistant"), "")


class MentionsAnswer(AbstractRewardProcessor):
    """1.0 when the reply names the expected answer (``ground_truth.answer``), else 0.0."""

    async def process(self, input: RewardInput) -> RewardOutput:  # noqa: A002 - the reference's name
        if input.agent_output.is_rollout_error:
            return RewardOutput(status=TaskStatus.FAILED, error="rollout failed")
        truth: Any = input.truth() or {}
        answer = str(truth.get("answer", "")).lower() if isinstance(truth, dict) else str(truth).lower()
        hit = float(bool(answer) and answer in _reply(input).lower())
        return RewardOutput(reward=Reward(reward_score=hit, reward_metrics={"mentions_answer": hit}))


class Brevity(AbstractRewardProcessor):
    """1 / (1 + words in the reply)."""

    async def process(self, input: RewardInput) -> RewardOutput:  # noqa: A002 - the reference's name
        words = len(_reply(input).split())
        return RewardOutput(reward=Reward(reward_score=1.0 / (1 + words), reward_metrics={"words": float(words)}))
