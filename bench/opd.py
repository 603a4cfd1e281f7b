"""Teacher scoring vs generation on the local engine, measured in one run.

On-policy distillation scores every token the student sampled with the teacher
(``prompt_logprobs`` over prompt + response, one forward pass per sequence).
This bench samples N completions (the student's rollouts, batched as a shard
runs them), then scores each prompt + completion as a teacher scoring call, and
prints, side by side:

- generation: sampled tokens/s (N concurrent requests, continuous batching);
- teacher scoring, one pass (what ``/v1/completions`` does for a vLLM-style
  scoring call: prompt logprobs and the one required token from one forward
  pass): scored tokens/s and response tokens/s;
- baseline, two passes (the previous behaviour: a one-token generation, then a
  separate scoring pass), same sequences;

plus the ratio of scoring to generation throughput, and a check that the
one-pass logprobs equal the two-pass ones.

Run: ``PYTHONPATH=. python bench/opd.py [--requests 8] [--max-tokens 32]``
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import torch

from bench import headline
from services.inference.chat import render_chat
from services.inference.config import engine_config
from services.inference.engine import Engine
from services.inference.loader import load_model, resolve_source
from services.inference.params import GenParams
from services.inference.protocol import CompletionRequest
from services.inference.service import completion
from shared.clients.scoring import parse_prompt_logprobs, prompt_logprobs_body
from shared.schema import Message

PROMPTS = ["Tell me about the sea.", "Explain rain to a child.", "List three fruits.", "What is a prime?",
           "Describe a cat.", "Why is the sky blue?", "Give a tip for sleep.", "Name a famous bridge."]


async def _generate(engine: Engine, prompts: list[list[int]], max_tokens: int) -> tuple[list[list[int]], float]:
    params = GenParams(temperature=1.0, max_tokens=max_tokens, ignore_eos=True, seed=0)
    started = time.perf_counter()
    results = await asyncio.gather(*(engine.generate(p, params) for p in prompts))
    elapsed = time.perf_counter() - started
    return [outs[0].token_ids for outs in results], elapsed


async def _score_one_pass(engine: Engine, sequences: list[list[int]]) -> tuple[list[list[float | None]], float]:
    started = time.perf_counter()
    answers = await asyncio.gather(*(completion(engine, CompletionRequest.model_validate(
        prompt_logprobs_body(engine.name, ids))) for ids in sequences))
    elapsed = time.perf_counter() - started
    return [parse_prompt_logprobs(a, ids) for a, ids in zip(answers, sequences, strict=True)], elapsed


async def _score_two_pass(engine: Engine, sequences: list[list[int]]) -> tuple[list[list[float | None]], float]:
    started = time.perf_counter()

    async def one(ids: list[int]) -> list[float | None]:
        await engine.generate(ids, GenParams(temperature=0.0, max_tokens=1))
        return (await engine.score_prompt(ids)).logprobs

    scores = await asyncio.gather(*(one(ids) for ids in sequences))
    return list(scores), time.perf_counter() - started


def _row(label: str, value: float, base: float, unit: str) -> str:
    return f"{label:<52} {value:>9.1f} {unit:<10} x{value / base:>6.2f}"


async def main(args: Any) -> None:
    """Measure and print."""
    loaded = load_model(resolve_source(""), cache_dir=engine_config().cache_dir)
    engine = Engine(loaded.model, loaded.tokenizer, name=loaded.name, max_batch_size=args.requests)
    prompts = [render_chat(loaded.tokenizer, [Message(role="user", content=p)])
               for p in (PROMPTS * args.requests)[: args.requests]]
    await engine.generate(prompts[0], GenParams(max_tokens=2))  # warm-up
    completions, gen_s = await _generate(engine, prompts, args.max_tokens)
    sequences = [p + c for p, c in zip(prompts, completions, strict=True)]
    one, one_s = await _score_one_pass(engine, sequences)
    two, two_s = await _score_two_pass(engine, sequences)
    engine.close()
    sampled = sum(len(c) for c in completions)
    scored = sum(len(s) for s in sequences)
    gen_tps, one_tps, two_tps = sampled / gen_s, scored / one_s, scored / two_s
    worst = max(abs((a or 0.0) - (b or 0.0)) for x, y in zip(one, two, strict=True) for a, b in zip(x, y, strict=True))
    print(f"torch threads: {torch.get_num_threads()}, {args.requests} requests, max_tokens {args.max_tokens}, "
          f"{sampled} sampled tokens, {scored} scored tokens (prompt + response)")
    print(f"{'':<52} {'value':>9} {'unit':<10} {'vs gen':>7}")
    print(_row(f"generation, {args.requests} concurrent (baseline)", gen_tps, gen_tps, "tok/s"))
    print(_row("teacher scoring, one pass: all scored tokens", one_tps, gen_tps, "tok/s"))
    print(_row("teacher scoring, one pass: response tokens", sampled / one_s, gen_tps, "tok/s"))
    print(_row("teacher scoring, two passes (old): all scored tokens", two_tps, gen_tps, "tok/s"))
    print(f"one pass vs two passes: x{one_tps / two_tps:.2f}; scoring a rollout takes "
          f"{one_s / gen_s * 100:.1f}% of its generation time; max |one - two| logprob {worst:.2e}")
    headline("opd", "teacher scoring, one pass: all scored tokens", one_tps, two_tps,
             baseline_name="two passes (old)", unit="tok/s")
    # Response tokens against generation: the same tokens scored as were sampled.
    headline("opd", "teacher scoring, one pass: response tokens", sampled / one_s, gen_tps,
             baseline_name=f"generation, {args.requests} concurrent", unit="tok/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=32)
    asyncio.run(main(parser.parse_args()))
