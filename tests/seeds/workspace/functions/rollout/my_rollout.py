"""A rollout processor written the way the DashScope reference writes one (trajforge's types,
the official ``openai`` client instead of langchain): model resource, sampling params and
budgets all come from the ``RolloutInput``."""

from __future__ import annotations

import json
import time
from typing import Any

from openai import AsyncOpenAI

from functions.tool_spec import SYSTEM_PROMPT, TOOL_DEFINITIONS
from shared.functions import AbstractRolloutProcessor, RolloutInput, RolloutOutput


class MyRolloutProcessor(AbstractRolloutProcessor):
    """One sampled turn with the workspace's tools; failures become a ROLLOUT_ERROR record."""

    def setup(self) -> None:
        pass

    async def process(self, input: RolloutInput) -> RolloutOutput:  # noqa: A002 - the reference's name
        started = time.perf_counter()
        resource = input.model_resource
        sampling = input.sampling_params or {}
        client = AsyncOpenAI(api_key=resource.api_key, base_url=resource.base_url, http_client=input.http_client,
                             max_retries=0, timeout=float(sampling.get("timeout", 60.0)))
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}, *input.messages]
        async with client:
            response = await client.chat.completions.create(
                model=resource.model_name or "", messages=messages,  # type: ignore[arg-type]
                tools=TOOL_DEFINITIONS, tool_choice="auto",  # type: ignore[arg-type]
                temperature=float(sampling.get("temperature", 0.2)),
                max_tokens=int(sampling.get("max_tokens", 512)))
        message = response.choices[0].message
        reply: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
        if message.tool_calls:
            reply["tool_calls"] = [c.model_dump() for c in message.tool_calls]
        return RolloutOutput.model_validate({
            "agent_output": {
                "messages": [*input.messages, reply],
                "rollout_extra": {**input.rollout_extra, "seen_sampling": sampling, "seen_limits": input.limits,
                                  "seen_tool_args": [json.loads(c.function.arguments)
                                                     for c in message.tool_calls or []]},
                "rollout_metrics": {"latency": round(time.perf_counter() - started, 4)},
                "reward_score": 0.0,
            },
            "status": "SUCCESS",
            "error": None,
        })
