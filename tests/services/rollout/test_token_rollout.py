"""MultiTurnRollout (token level) with the real SmolLM2 tokenizer and chat template.
The sampler is a scripted policy: fixed replies, tokenised by the real tokenizer."""

from __future__ import annotations

from typing import Any

import pytest

from services.rollout.token_rollout import MultiTurnRollout
from shared.errors import InvalidInput
from shared.schema import SamplingParams, Trajectory
from shared.toolcalls.prompt import template_handles_tools, with_tool_block
from tests.services.rollout.support import (
    FunctionTools,
    ScriptedPolicy,
    hermes_parser,
    tool_call_text,
)

PROMPT = {"id": "t1", "messages": [{"role": "user", "content": "What is 2 + 3? Use the tool."}]}


def two_calls_then_answer(user: str, turn: int) -> str:
    if turn < 2:
        return "Let me check. " + tool_call_text("add", a=2, b=3 + turn)
    return "The answer is 5."


def rollout(policy: ScriptedPolicy, tok: Any, **kw: Any) -> MultiTurnRollout:
    return MultiTurnRollout(policy, tok, FunctionTools(add=lambda a, b: a + b), parser=hermes_parser, **kw)


async def run_one(policy: ScriptedPolicy, tok: Any, **kw: Any) -> Trajectory:
    [traj] = await rollout(policy, tok, **kw).run([PROMPT])
    return traj


async def test_ids_decode_to_the_rendered_conversation(smol_tokenizer: Any) -> None:
    traj = await run_one(ScriptedPolicy(smol_tokenizer, two_calls_then_answer), smol_tokenizer)
    assert traj.stop_reason == "stop" and traj.turns == 3
    assert traj.tokens is not None
    decoded = smol_tokenizer.decode(traj.tokens.input_ids, skip_special_tokens=False)
    messages = [m.to_openai() for m in traj.messages]
    if traj.tools and not template_handles_tools(smol_tokenizer):
        # SmolLM2's template drops tools: the rollout offers them in the system prompt instead.
        messages = with_tool_block(messages, [t.model_dump(mode="json") for t in traj.tools])
    rendered = smol_tokenizer.apply_chat_template(messages, tokenize=False)
    # The template writes a newline after the final <|im_end|> the model never samples.
    assert rendered == decoded + "\n"
    assert "<|im_start|>tool\n5<|im_end|>" in decoded and "<|im_start|>tool\n6<|im_end|>" in decoded


async def test_labels_mask_everything_not_sampled_and_logprobs_align(smol_tokenizer: Any) -> None:
    policy = ScriptedPolicy(smol_tokenizer, two_calls_then_answer)
    traj = await run_one(policy, smol_tokenizer)
    tokens = traj.tokens
    assert tokens is not None
    labels = tokens.labels
    assert len(labels) == len(tokens.input_ids)
    sampled = [i for i, lab in zip(tokens.input_ids, labels) if lab != -100]
    expected = [i for turn in range(3)
                for i in smol_tokenizer.encode(two_calls_then_answer("", turn), add_special_tokens=False)
                + [smol_tokenizer.eos_token_id]]
    assert sampled == expected
    assert labels[: len(tokens.prompt_ids)] == [-100] * len(tokens.prompt_ids)
    assert sum(lp is not None for lp in tokens.logprobs) == len(sampled)
    assert all((lp is None) == (m == 0) for lp, m in zip(tokens.logprobs, tokens.loss_mask))


async def test_sampled_ids_are_kept_verbatim_where_retokenising_would_differ(smol_tokenizer: Any) -> None:
    # The sampler emits a valid but non-canonical tokenisation (one id per character).
    policy = ScriptedPolicy(smol_tokenizer, two_calls_then_answer, char_level=True)
    traj = await run_one(policy, smol_tokenizer)
    tokens = traj.tokens
    assert tokens is not None
    first_turn = [i for ch in two_calls_then_answer("", 0)
                  for i in smol_tokenizer.encode(ch, add_special_tokens=False)]
    start = len(tokens.prompt_ids)
    assert tokens.response_ids[: len(first_turn)] == first_turn
    decoded = smol_tokenizer.decode(tokens.input_ids, skip_special_tokens=False)
    retokenised = smol_tokenizer.encode(decoded, add_special_tokens=False)
    assert retokenised != tokens.input_ids  # a text round trip would have changed the training ids
    assert smol_tokenizer.decode(retokenised, skip_special_tokens=False) == decoded
    assert tokens.input_ids[start: start + len(first_turn)] == first_turn


async def test_max_trajectory_tokens_is_a_total_budget(smol_tokenizer: Any) -> None:
    full = await run_one(ScriptedPolicy(smol_tokenizer, two_calls_then_answer), smol_tokenizer)
    assert full.tokens is not None
    # A budget between the prompt and the whole conversation: the prompt counts toward it too.
    budget = (len(full.tokens.prompt_ids) + len(full.tokens.input_ids)) // 2
    traj = await run_one(ScriptedPolicy(smol_tokenizer, two_calls_then_answer), smol_tokenizer,
                         max_trajectory_tokens=budget)
    assert traj.stop_reason == "max_total_tokens" and traj.truncated
    assert traj.tokens is not None and len(full.tokens.prompt_ids) < len(traj.tokens.input_ids) <= budget + 40


async def test_length_stop_keeps_ids_without_an_end_token(smol_tokenizer: Any) -> None:
    policy = ScriptedPolicy(smol_tokenizer, two_calls_then_answer)
    traj = await run_one(policy, smol_tokenizer, sampling_params=SamplingParams(max_tokens=4))
    assert traj.stop_reason == "length" and traj.tokens is not None
    assert len(traj.tokens.response_ids) == 4 and sum(traj.tokens.loss_mask) == 4


async def test_max_turns_in_token_mode(smol_tokenizer: Any) -> None:
    def always(u: Any, t: int) -> str:
        return tool_call_text("add", a=1, b=1)

    traj = await run_one(ScriptedPolicy(smol_tokenizer, always), smol_tokenizer, max_turns=2)
    assert (traj.stop_reason, traj.turns) == ("max_turns", 2)
    assert traj.tokens is not None and traj.tokens.loss_mask[-1] == 1  # ends on sampled ids


def test_constructor_refuses_several_samples_per_turn(smol_tokenizer: Any) -> None:
    with pytest.raises(InvalidInput):
        MultiTurnRollout(ScriptedPolicy(smol_tokenizer, two_calls_then_answer), smol_tokenizer,
                         sampling_params=SamplingParams(n=2))
