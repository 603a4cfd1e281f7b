"""The rollout processor: one policy turn with the workspace's tools through ``input.model_resource``."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from openai import AsyncOpenAI

from functions.tool_spec import SYSTEM_PROMPT, TOOL_DEFINITIONS
from shared.functions import AbstractRolloutProcessor, AgentOutput, RolloutInput, RolloutOutput, TaskStatus


class MyRolloutProcessor(AbstractRolloutProcessor):
    """Samples one reply (native tool calls); records where it ran so tests can see the isolation."""

    def setup(self) -> None:
        self.pid = os.getpid()

    async def process(self, input: RolloutInput) -> RolloutOutput:  # noqa: A002 - the reference's name
        started = time.perf_counter()
        resource = input.model_resource
        sampling = input.sampling_params or {}
        client = AsyncOpenAI(api_key=resource.api_key or "EMPTY", base_url=resource.base_url, max_retries=0,
                             timeout=float(sampling.get("timeout", 60.0)))
        async with client:
            response = await client.chat.completions.create(
                model=resource.model_name, messages=[{"role": "system", "content": SYSTEM_PROMPT}, *input.messages],
                tools=TOOL_DEFINITIONS, tool_choice="auto", temperature=float(sampling.get("temperature", 0.0)),
                max_tokens=int(sampling.get("max_tokens", 32)))
        message = response.choices[0].message
        reply: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
        if message.tool_calls:
            reply["tool_calls"] = [c.model_dump() for c in message.tool_calls]
        extra = {**input.rollout_extra, "worker_pid": self.pid, "env_marker": os.environ.get("OPD_MARKER"),
                 "tool_args": [json.loads(c.function.arguments) for c in message.tool_calls or []]}
        return RolloutOutput(
            agent_output=AgentOutput(messages=[*input.messages, reply], rollout_extra=extra,
                                     rollout_metrics={"latency": round(time.perf_counter() - started, 4),
                                                      "tool_call_count": float(len(message.tool_calls or []))}),
            status=TaskStatus.SUCCESS)
