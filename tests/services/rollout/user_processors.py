"""Rollout processors as a user package would write them (loaded by classpath in the processor-job tests).

``TwoTurnChat`` talks to the policy with the official ``openai`` client at the
base URL it is given, so every call passes through the gateway and is captured.
"""

from __future__ import annotations

import asyncio
from typing import Any

from openai import AsyncOpenAI

from shared.functions import AgentOutput, RolloutInput, RolloutOutput

FOLLOW_UP = "Now say it in three words."


class TwoTurnChat:
    """Two policy turns: answer the task, then answer a fixed follow-up question."""

    def __init__(self, max_tokens: int = 6) -> None:
        self.max_tokens = max_tokens

    async def process(self, inp: RolloutInput) -> RolloutOutput:
        """Run the conversation through ``inp.model_resource.base_url`` and return it."""
        resource = inp.model_resource
        client = AsyncOpenAI(base_url=resource.base_url, api_key=resource.api_key, http_client=inp.http_client,
                             max_retries=0)
        messages: list[dict[str, Any]] = list(inp.messages)
        async with client:
            for turn in range(2):
                reply = await client.chat.completions.create(
                    model=resource.model_name, messages=messages,  # type: ignore[arg-type]
                    max_tokens=self.max_tokens, temperature=0)
                messages.append({"role": "assistant", "content": reply.choices[0].message.content or ""})
                if turn == 0:
                    messages.append({"role": "user", "content": FOLLOW_UP})
        return RolloutOutput(agent_output=AgentOutput(messages=messages))


class Explodes:
    """A processor whose tool backend is down."""

    def process(self, inp: RolloutInput) -> RolloutOutput:
        """Always fails."""
        raise RuntimeError("tool backend unreachable")


class Hangs:
    """A processor that never returns (its runtime's timeout_s must end it)."""

    async def process(self, inp: RolloutInput) -> RolloutOutput:
        """Waits forever."""
        await asyncio.sleep(3600)
        return RolloutOutput()


class EditsHistory(TwoTurnChat):
    """Sends its first reply back edited, so the second call's prompt breaks the first call's tokens."""

    async def process(self, inp: RolloutInput) -> RolloutOutput:
        """Like ``TwoTurnChat``, but the history it sends back is not what the policy said."""
        resource = inp.model_resource
        client = AsyncOpenAI(base_url=resource.base_url, api_key=resource.api_key, http_client=inp.http_client,
                             max_retries=0)
        messages: list[dict[str, Any]] = list(inp.messages)
        async with client:
            for turn in range(2):
                reply = await client.chat.completions.create(
                    model=resource.model_name, messages=messages,  # type: ignore[arg-type]
                    max_tokens=self.max_tokens, temperature=0)
                text = reply.choices[0].message.content or ""
                messages.append({"role": "assistant", "content": "Edited: " + text if turn == 0 else text})
                if turn == 0:
                    messages.append({"role": "user", "content": FOLLOW_UP})
        return RolloutOutput(agent_output=AgentOutput(messages=messages))
