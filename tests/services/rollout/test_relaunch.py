"""Speculative relaunch of stragglers: the policy's budget and choice, and the engine keeping groups exact.

The engine tests use a scripted policy (fixed replies, tokenised by the real SmolLM2 tokenizer and, in
token mode, stitched by the real chat-template bridge); a member's reply carries its seed, so every
member's tokens are its own.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.rollout.bridge import TokenBridge
from services.rollout.engine import AsyncRolloutEngine
from services.rollout.ports import PolicyOutput
from services.rollout.relaunch import Candidate, RelaunchPolicy
from shared.errors import InvalidInput
from shared.schema import STOP_REASONS, SamplingParams
from shared.schema.budgets import RolloutLimits
from tests.services.rollout.support import FunctionTools, ScriptedPolicy, hermes_parser, tool_call_text


def _c(group: str, needed: int, running: int, spares: int = 0, key: float = 0.0) -> Candidate:
    return Candidate(group=group, needed=needed, running=running, spares=spares, key=key)


def test_the_budget_is_spares_per_member_started() -> None:
    policy = RelaunchPolicy(budget=0.125)
    assert not policy.allowed()  # nothing started: no budget yet
    policy.members = 16
    assert policy.pick([_c("a", 1, 1)]) is not None
    assert policy.pick([_c("b", 1, 1)]) is not None
    assert policy.pick([_c("c", 1, 1)]) is None and policy.spares == 2
    policy.members = 24
    assert policy.pick([_c("c", 1, 1)]) is not None and policy.spares == 3


def test_only_groups_down_to_their_stragglers_without_a_spare_qualify() -> None:
    policy = RelaunchPolicy(budget=1.0, stragglers=2, members=100)
    assert policy.qualifies(_c("a", 2, 2)) and policy.qualifies(_c("a", 1, 1))
    assert not policy.qualifies(_c("a", 3, 3))  # more left than stragglers
    assert not policy.qualifies(_c("a", 1, 2, spares=1))  # already has its spare
    assert not policy.qualifies(_c("a", 1, 2))  # over-sampled: a surplus member is already running
    assert not policy.qualifies(_c("a", 0, 0))  # complete


def test_the_most_urgent_straggler_gets_the_spare() -> None:
    policy = RelaunchPolicy(budget=1.0, members=10)
    picked = policy.pick([_c("a", 1, 1, key=-0.5), _c("b", 2, 2, key=-3.0), _c("c", 4, 4, key=-9.0)])
    assert picked is not None and picked.group == "b"  # c is most urgent but not down to its stragglers


def test_bad_settings_are_refused() -> None:
    with pytest.raises(InvalidInput, match="budget"):
        RelaunchPolicy(budget=1.5)
    with pytest.raises(InvalidInput, match="stragglers"):
        RelaunchPolicy(budget=0.1, stragglers=0)


class SeededReplies(ScriptedPolicy):
    """Replies carry the call's seed (one stream per member and turn), so members differ."""

    def _output(self, text: str, index: int, sampling: SamplingParams, prompt_tokens: int) -> PolicyOutput:
        return super()._output(f"{text} #{sampling.seed}", index, sampling, prompt_tokens)


def _straggler_engine(tok: Any, *, relaunch: float, mode: str = "messages", timeout_s: float = 60.0
                      ) -> tuple[AsyncRolloutEngine, Any]:
    # Member 0's first call (call index 0) hangs; every other call answers at once.
    policy = SeededReplies(tok, lambda u, t: tool_call_text("add", a=t, b=1) if t == 0 else "done",
                           delay_s=lambda i: 30.0 if i == 0 else 0.0)
    engine = AsyncRolloutEngine(policy, tools=FunctionTools(add=lambda a, b: a + b), parser=hermes_parser,
                                mode=mode, bridge=TokenBridge(tok) if mode == "tokens" else None,  # type: ignore[arg-type]
                                sampling_params=SamplingParams(seed=5), limits=RolloutLimits(max_turns=4, timeout_s=timeout_s, tool_timeout_s=timeout_s),
                                concurrency=8, relaunch=relaunch, relaunch_stragglers=1)
    return engine, policy


@pytest.mark.parametrize("mode", ["messages", "tokens"])
async def test_a_spare_replaces_the_straggler_and_the_group_stays_exact(smol_tokenizer: Any, mode: str) -> None:
    engine, policy = _straggler_engine(smol_tokenizer, relaunch=0.25, mode=mode)
    [group] = await engine.collect_batch([{"id": "p", "messages": [{"role": "user", "content": "go"}]}],
                                         group_size=4)
    kept = group.trajectories
    assert [t.sample_index for t in kept] == [1, 2, 3, 4]  # the spare is member 4, the straggler is out
    assert len({t.id for t in kept}) == 4 and all(t.stop_reason in STOP_REASONS for t in kept)
    assert all((t.stop_reason, t.turns) == ("stop", 2) for t in kept)
    spare = kept[-1]
    assert spare.metadata["spare"] is True and spare.metadata["spare_for"] == 0
    [cut] = group.cut
    assert (cut.member, cut.reason, cut.stop_reason, cut.spare) == (0, "unfinished_when_group_full", "cancelled", False)
    assert policy.cancelled == 1  # the straggler's hung call was cancelled
    for traj in kept:  # each member's messages hold its own samples only (its seed stream: 5 + 7919 k + turn)
        seeds = [m.text().rsplit("#", 1)[1] for m in traj.messages if m.role == "assistant"]
        assert seeds == [str(5 + 7919 * traj.sample_index + turn) for turn in range(2)]
    if mode == "tokens":  # token-exact: the sampled ids are exactly this member's outputs, nothing else
        for traj in kept:
            assert traj.tokens is not None
            sampled = [i for i, m in zip(traj.tokens.response_ids, traj.tokens.loss_mask, strict=True) if m]
            assert len(sampled) == sum(s.completion_tokens for s in traj.steps)
            text = smol_tokenizer.decode(sampled, skip_special_tokens=True)
            assert f"#{5 + 7919 * traj.sample_index}" in text and f"#{5 + 7919 * traj.sample_index + 1}" in text
    stats = engine.stats
    assert (stats["spares"], stats["spares_kept"], stats["spare_policy_calls"]) == (1, 1, 2)
    assert stats["cut_policy_calls"] == 1 and stats["spare_completion_tokens"] > 0
    assert stats["policy_calls"] == 4 * 2 + 1  # kept members' calls and the straggler's cancelled one


async def test_without_a_budget_nothing_is_relaunched(smol_tokenizer: Any) -> None:
    engine, policy = _straggler_engine(smol_tokenizer, relaunch=0.0, timeout_s=0.5)  # the straggler times out
    [group] = await engine.collect_batch([{"id": "p", "messages": [{"role": "user", "content": "go"}]}],
                                         group_size=4)
    assert [t.sample_index for t in group.trajectories] == [0, 1, 2, 3] and not group.cut
    assert group.trajectories[0].stop_reason == "timeout"
    assert engine.stats["spares"] == 0 and engine.stats["spare_policy_calls"] == 0


async def test_the_budget_bounds_the_spares_of_a_batch(smol_tokenizer: Any) -> None:
    # Each group's member 0 is slow on its first call (calls 0 and 4: the groups start their members in
    # order); one spare per 8 members started allows one of the two groups a spare, not both.
    policy = SeededReplies(smol_tokenizer, lambda u, t: "done", delay_s=lambda i: 0.4 if i in (0, 4) else 0.0)
    engine = AsyncRolloutEngine(policy, parser=hermes_parser, concurrency=16, relaunch=0.125,
                                relaunch_stragglers=1, limits=RolloutLimits(max_turns=2))
    prompts = [{"id": f"p{i}", "messages": [{"role": "user", "content": f"q{i}"}]} for i in range(2)]
    groups = await engine.collect_batch(prompts, group_size=4)
    assert engine.stats["spares"] == 1 and engine.stats["spares_kept"] == 1
    members = sorted([t.sample_index for t in g.trajectories] for g in groups)
    assert members == [[0, 1, 2, 3], [1, 2, 3, 4]]
    assert all(len({t.id for t in g.trajectories}) == 4 for g in groups)
