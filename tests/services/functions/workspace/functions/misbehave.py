"""Processors that misbehave on request (``rollout_extra.do``), for the isolation tests."""

from __future__ import annotations

import asyncio
import os
import time

from shared.functions import AbstractRolloutProcessor, AgentOutput, RolloutInput, RolloutOutput


class Misbehaving(AbstractRolloutProcessor):
    """echo | sleep | crash | hang | oom | disk, as ``rollout_extra['do']`` says."""

    async def process(self, input: RolloutInput) -> RolloutOutput:  # noqa: A002 - the reference's name
        do = input.rollout_extra.get("do", "echo")
        if do == "sleep":
            await asyncio.sleep(float(input.rollout_extra.get("seconds", 1.0)))
        elif do == "crash":
            os._exit(7)
        elif do == "hang":
            time.sleep(3600)  # blocks the event loop: only killing the instance ends it
        elif do == "oom":
            hog = []
            while True:
                hog.append(bytearray(16 * 1024 * 1024))
        elif do == "disk":
            with open("big.bin", "wb") as out:
                chunk = b"x" * (1024 * 1024)
                for _ in range(int(input.rollout_extra.get("mb", 64))):
                    out.write(chunk)
        reply = {"role": "assistant", "content": f"pid={os.getpid()} cwd={os.getcwd()}"}
        return RolloutOutput(agent_output=AgentOutput(messages=[*input.messages, reply],
                                                      rollout_extra={**input.rollout_extra, "pid": os.getpid()}))
