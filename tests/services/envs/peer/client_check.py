"""Drive a server with the stock openenv-core clients; print one JSON report on stdout."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from openenv.core import EnvClient, GenericEnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server.types import Observation, State


class CounterObservation(Observation):
    """Typed observation: extra keys would fail validation (extra='forbid')."""

    value: int
    text: str


class TypedCounter(EnvClient[dict[str, Any], CounterObservation, State]):
    """A typed client built the way env packages build theirs."""

    def _step_payload(self, action: dict[str, Any]) -> dict[str, Any]:
        return action

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[CounterObservation]:
        obs = CounterObservation(**payload["observation"])
        return StepResult(
            observation=obs, reward=payload.get("reward"), done=payload.get("done", False)
        )

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)


async def _generic(url: str) -> dict[str, Any]:
    async with GenericEnvClient(base_url=url) as env:
        first = await env.reset(seed=1, start=2)
        step = await env.step({"delta": 3})
        state = await env.state()
    return {
        "reset": first.observation,
        "step": step.observation,
        "reward": step.reward,
        "state": state,
    }


async def _typed(url: str) -> dict[str, Any]:
    async with TypedCounter(base_url=url) as env:
        await env.reset()
        step = await env.step({"delta": 4})
    return {"value": step.observation.value, "reward": step.reward}


def _sync(url: str) -> dict[str, Any]:
    with GenericEnvClient(base_url=url).sync() as env:
        env.reset()
        a = env.step({"delta": 1})
        b = env.step({"delta": 1})
    return {"values": [a.observation["value"], b.observation["value"]]}


def main() -> None:
    url = sys.argv[1]
    report = {
        "generic": asyncio.run(_generic(url)),
        "typed": asyncio.run(_typed(url)),
        "sync": _sync(url),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
