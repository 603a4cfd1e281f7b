"""MicroBatcher over a real per-call batching backend built on the scripted policy
(fixed replies, tokenised by the real SmolLM2 tokenizer)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from services.rollout.bridge import TokenBridge
from services.rollout.engine import AsyncRolloutEngine
from services.rollout.microbatch import MicroBatcher
from services.rollout.ports import PolicyOutput
from shared.errors import InvalidInput, UpstreamUnavailable
from shared.schema import SamplingParams
from tests.services.rollout.support import (
    FunctionTools,
    ScriptedPolicy,
    hermes_parser,
    tool_call_text,
)


class BatchBackend:
    """Answers a whole batch per call, taking as long as its slowest member."""

    def __init__(self, policy: ScriptedPolicy, *, per_call_s: float = 0.02, fail: bool = False) -> None:
        self.policy, self.per_call_s, self.fail = policy, per_call_s, fail

    async def generate_batch(self, prompts: Sequence[list[int]], *, sampling: SamplingParams
                             ) -> list[PolicyOutput]:
        await asyncio.sleep(self.per_call_s)
        if self.fail:
            raise UpstreamUnavailable("batch backend down")
        return [await self.policy.generate(p, sampling=sampling) for p in prompts]


def script(user: str, turn: int) -> str:
    return tool_call_text("add", a=1, b=2) if turn == 0 and user != "quick" else "done"


def engine(batcher: MicroBatcher, tok: Any, **kw: Any) -> AsyncRolloutEngine:
    return AsyncRolloutEngine(batcher, mode="tokens", bridge=TokenBridge(tok), parser=hermes_parser,
                              tools=FunctionTools(add=lambda a, b: a + b), **kw)


async def test_requests_are_batched_and_every_member_finishes(smol_tokenizer: Any) -> None:
    batcher = MicroBatcher(BatchBackend(ScriptedPolicy(smol_tokenizer, script)), max_batch_size=8)
    groups = await engine(batcher, smol_tokenizer).collect_batch(
        [{"id": "a", "messages": [{"role": "user", "content": "slow"}]},
         {"id": "b", "messages": [{"role": "user", "content": "quick"}]}], group_size=4)
    assert all(t.stop_reason == "stop" for g in groups for t in g.trajectories)
    assert max(batcher.batch_sizes) == 8 and sum(batcher.batch_sizes) == 12
    # Quick members stop after one turn; slow ones take a tool turn first.
    assert [g.trajectories[0].turns for g in groups] == [2, 1]


async def test_backend_failure_reaches_every_caller_as_data(smol_tokenizer: Any) -> None:
    batcher = MicroBatcher(BatchBackend(ScriptedPolicy(smol_tokenizer, script), fail=True))
    [group] = await engine(batcher, smol_tokenizer).collect_batch(
        [{"id": "a", "messages": [{"role": "user", "content": "x"}]}], group_size=3)
    assert [t.stop_reason for t in group.trajectories] == ["api_error"] * 3


async def test_cancelled_waiting_request_is_not_sent(smol_tokenizer: Any) -> None:
    backend = BatchBackend(ScriptedPolicy(smol_tokenizer, script), per_call_s=0.2)
    batcher = MicroBatcher(backend, max_batch_size=1)
    ids = smol_tokenizer.encode("<|im_start|>user\nq<|im_end|>\n", add_special_tokens=False)
    first = asyncio.create_task(batcher.generate(ids, sampling=SamplingParams()))
    second = asyncio.create_task(batcher.generate(ids, sampling=SamplingParams()))
    await asyncio.sleep(0.05)
    second.cancel()
    await first
    await asyncio.sleep(0.01)
    assert batcher.batch_sizes == [1]


async def test_message_mode_is_refused() -> None:
    batcher = MicroBatcher(BatchBackend.__new__(BatchBackend))
    with pytest.raises(InvalidInput):
        await batcher.chat([], tools=None, sampling=SamplingParams())
